"""A process's CPU time, read from its CPU-time clock to the nanosecond: ``/proc`` counts it in 10 ms ticks,
longer than a Streamlit rerun, so many reruns had to be averaged to see one."""

from __future__ import annotations

import os
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far: all its threads, those that ended too (Linux)."""
    return time.clock_gettime_ns(_process_cpu_clock(pid)) / 1e9


def _process_cpu_clock(pid: int) -> int:
    """Linux's clock id for a process's CPU time (``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``)."""
    return ((~pid) << 3) | 2


def descendants(pid: int, program: str) -> list[int]:
    """The processes under ``pid`` (children, theirs, ...) running a program named ``program`` (Debian's
    ``/usr/bin/chromium`` is a script that runs ``/usr/lib/chromium/chromium``: both are named ``chromium``)."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])

    def under(child: int) -> bool:
        while child in parents and child != pid:
            child = parents[child]
        return child == pid

    wanted = os.fsencode(Path(program).name)  # a Chromium child rewrites its command line, one string with spaces
    return [
        child
        for child, command in commands.items()
        if os.path.basename(command.split(b"\0")[0].split(b" ")[0]) == wanted and under(child)
    ]


def total_cpu_seconds(pids: list[int]) -> float:
    """The CPU time ``pids`` have used so far, those that ended since counting nothing."""
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue
    return total
