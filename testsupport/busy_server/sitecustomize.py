"""Imported at start by a Python process whose ``PYTHONPATH`` names this folder (a test sets it for a server it
starts): with ``AGENT_TEST_BUSY_THREADS=N``, N threads keep the interpreter busy, as a transcription's Python
work or other sessions' scripts do, so the server's own threads wait their turn for the GIL. With
``AGENT_TEST_BUSY_AFTER=<path>`` they start once that file exists (the test's page loaded at full speed)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def _spin(start: Path | None) -> None:
    while start is not None and not start.exists():
        time.sleep(0.05)
    while True:
        sum(range(10_000))


_START = os.environ.get("AGENT_TEST_BUSY_AFTER")
for _ in range(int(os.environ.get("AGENT_TEST_BUSY_THREADS") or 0)):
    threading.Thread(target=_spin, args=(Path(_START) if _START else None,), name="busy", daemon=True).start()
