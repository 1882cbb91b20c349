"""A bounded pool of daemon threads that exist only while there is work.

Runs get their own threads, not Streamlit's script thread (a run outlives the tab) and not the HTTP
server's shared pool (a long run must not hold up pages and media). Why not
``concurrent.futures.ThreadPoolExecutor``: its workers are joined at interpreter exit, so stopping the
server would wait for a five-minute transcription; here a stopped server simply ends its runs, and
their leases tell everyone they were interrupted. Jobs past ``max_workers`` wait in FIFO order.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

logger = logging.getLogger(__name__)


class BoundedExecutor:
    """``submit(job)``: run ``job`` on one of at most ``max_workers`` daemon threads."""

    def __init__(self, max_workers: int, name: str = "agent-run") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._name = name
        self._jobs: deque[Callable[[], None]] = deque()
        self._workers = 0
        self._guard = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._guard:
            self._jobs.append(job)
            if self._workers >= self.max_workers:
                return
            self._workers += 1
        threading.Thread(target=self._work, name=f"{self._name}-{id(job):x}", daemon=True).start()

    @property
    def waiting(self) -> int:
        """Jobs not started yet."""
        with self._guard:
            return len(self._jobs)

    def _work(self) -> None:
        while True:
            with self._guard:
                if not self._jobs:
                    self._workers -= 1
                    return
                job = self._jobs.popleft()
            try:
                job()
            except BaseException:  # a job must never take its worker (and the jobs queued behind it) down
                logger.exception("A run job failed outside its own error handling")
