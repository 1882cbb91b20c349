"""A bounded pool of daemon threads, started as work comes and kept for the next.

Runs get their own threads, not Streamlit's script thread (a run outlives the tab) and not the HTTP
server's shared pool (a long run must not hold up pages and media). Why not
``concurrent.futures.ThreadPoolExecutor``: its workers are joined at interpreter exit, so stopping the
server would wait for a five-minute transcription; here a stopped server simply ends its runs, and
their leases tell everyone they were interrupted. Jobs past ``max_workers`` wait in FIFO order.

A worker, once started, stays for good (idle workers wait for the next job; at most ``max_workers``
threads ever): a thread keeps its event loop, and with it the provider's SDK client and open connections
(:mod:`agent_app.providers.provider_loop`), so a run after a run builds neither again. Workers that ended
when idle would each leave their SDK client and its open connections behind: the adapters keep one client
per event loop, and nothing closes it when a loop goes. Between jobs a worker lets its loop finish closing
what the last run left. :meth:`BoundedExecutor.close` (a process done with its runs, a test) ends the
workers once the queued jobs are done, and each closes its loop as it goes.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable

from agent_app.providers.provider_loop import close_thread_loop, settle_thread_loop

logger = logging.getLogger(__name__)


class BoundedExecutor:
    """``submit(job)``: run ``job`` on one of at most ``max_workers`` daemon threads."""

    def __init__(self, max_workers: int) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._jobs: deque[Callable[[], None]] = deque()
        self._workers = 0
        self._idle = 0
        """Workers waiting for a job (a notified one counts until it has woken)."""
        self._numbers = itertools.count(1)
        self._ready = threading.Condition()
        self._closed = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._ready:
            if self._closed:
                raise RuntimeError("the executor is closed")
            self._jobs.append(job)
            if len(self._jobs) <= self._idle:
                self._ready.notify()
                return
            if self._workers >= self.max_workers:
                return
            self._workers += 1
            name = f"agent-run-{next(self._numbers)}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    @property
    def waiting(self) -> int:
        """Jobs not started yet."""
        with self._ready:
            return len(self._jobs)

    @property
    def workers(self) -> int:
        """Threads alive, busy or idle."""
        with self._ready:
            return self._workers

    @property
    def idle(self) -> int:
        """Threads waiting for a job."""
        with self._ready:
            return self._idle

    def close(self) -> None:
        """Take no new jobs; each worker ends once no queued job is left for it (a running job is not
        interrupted), closing its event loop."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _work(self) -> None:
        while (job := self._next_job()) is not None:
            try:
                job()
            except BaseException:  # a job must never take its worker (and the jobs queued behind it) down
                logger.exception("A run job failed outside its own error handling")
            del job  # nothing of the last run stays referenced while the worker waits
            try:
                settle_thread_loop()
            except Exception:
                logger.exception("Settling a run worker's event loop failed")
        try:
            close_thread_loop()
        except Exception:
            logger.exception("Closing a run worker's event loop failed")

    def _next_job(self) -> Callable[[], None] | None:
        """The oldest job, waiting as long as it takes for one; ``None`` once closed and none is left (the
        worker then ends)."""
        with self._ready:
            while not self._jobs:
                if self._closed:
                    self._workers -= 1
                    return None
                self._idle += 1
                try:
                    self._ready.wait()
                finally:
                    self._idle -= 1
            return self._jobs.popleft()
