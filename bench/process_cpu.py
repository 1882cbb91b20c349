"""A process's CPU time, read from its CPU-time clock to the nanosecond: ``/proc`` counts it in 10 ms ticks,
longer than a Streamlit rerun, so many reruns had to be averaged to see one."""

from __future__ import annotations

import time


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far: all its threads, those that ended too (Linux)."""
    return time.clock_gettime_ns(_process_cpu_clock(pid)) / 1e9


def _process_cpu_clock(pid: int) -> int:
    """Linux's clock id for a process's CPU time (``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``)."""
    return ((~pid) << 3) | 2
