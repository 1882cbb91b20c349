"""Driving other processes of the app from a test: :class:`AppProcess` starts one (``tests.run_process``, or
the real ``python -m agent_app.worker``), reads its JSON lines on a thread of its own, and stops it by its
own PID (SIGKILL when the test did not end it already)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testsupport.streamlit_server import ROOT

Line = dict[str, Any]


class AppProcess:
    """One started process, its JSON output lines in order (other lines, logs, go to its log file)."""

    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process = process
        self.log = log
        self._lines: queue.Queue[Line] = queue.Queue()
        self.seen: list[Line] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                self._lines.put(line)

    def send(self, command: Line) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def wait_for(self, matches: Callable[[Line], bool], timeout: float) -> Line:
        """The first line (seen before, or coming) for which ``matches`` is true."""
        for line in self.seen:
            if matches(line):
                return line
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"timed out\n{self.output()}"
            try:
                line = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                assert self.process.poll() is None, f"exited with {self.process.returncode}\n{self.output()}"
                continue
            self.seen.append(line)
            if matches(line):
                return line

    def start_run(self, conversation_id: str, question: str, timeout: float) -> str:
        self.send({"start": conversation_id, "question": question})
        return str(self.wait_for(lambda line: "run" in line, timeout)["run"])

    def signal(self, number: signal.Signals) -> None:
        os.kill(self.process.pid, number)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@contextmanager
def app_process(args: list[str], env: Mapping[str, str], log_dir: Path, name: str) -> Iterator[AppProcess]:
    """``python ARGS`` in the project's folder with ``env`` added; killed by its PID at the end if still there."""
    log = log_dir / f"{name}.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
        )
    started = AppProcess(process, log)
    try:
        yield started
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)  # a paused process must wake to die cleanly
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@contextmanager
def run_process(  # noqa: PLR0913 - the process's settings, each named at the call
    env: Mapping[str, str], log_dir: Path, mode: str = "thread", *, lease_ms: int, heartbeat: float, name: str = "a"
) -> Iterator[AppProcess]:
    """``tests.run_process`` (see there), ready to take commands."""
    with app_process(["-m", "tests.run_process", mode, str(lease_ms), str(heartbeat)], env, log_dir, name) as started:
        started.wait_for(lambda line: "ready" in line, 60)
        yield started
