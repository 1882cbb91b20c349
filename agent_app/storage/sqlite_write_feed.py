"""Other processes' run writes on one SQLite file, for :class:`~agent_app.runs.wakeups.RunWakeups`.

SQLite has no notifications, so one thread per process (not per tab) reads ``PRAGMA data_version`` on a
connection of its own, which changes when any other connection committed: a look at the WAL index in
shared memory, no page of the database read. Only when it changed does the thread read the live and
just-ended runs' counters (``last_event_seq``, ``stop_requested``) and wake whoever waits on what moved;
its own process's writes were announced as they committed and are recognised by their ``seq``.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

from agent_app.runs.wakeups import RunWakeups
from agent_app.types import now_ms

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1
"""How often the thread looks at ``data_version``: the delay before a write of another process is seen."""
RETRY_SECONDS = 30.0
"""After the file could not be opened for watching (a read-only folder), how long before trying again."""
RECENT_MS = 60_000
"""Runs that ended this recently are still looked at (their last events follow the end of the run)."""
_RUNS = (
    "SELECT id, conversation_id, last_event_seq, stop_requested FROM runs"
    " WHERE state IN ('queued', 'running') OR finished_at >= ?"
)


class SqliteWriteFeed:
    """The thread that turns other connections' commits into wake-ups; it runs while somebody watches."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._failed_at = -RETRY_SECONDS
        self._released: threading.Thread | None = None
        """A thread :meth:`release` asked to end (it looks at this between polls)."""

    def ensure_running(self, wakeups: RunWakeups) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive():
            return
        with self._guard:
            if self._closed or (self._thread is not None and self._thread.is_alive()):
                return
            if time.monotonic() - self._failed_at < RETRY_SECONDS:
                return
            self._thread = threading.Thread(
                target=self._watch, args=(wakeups,), name="agent-sqlite-write-feed", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._closed = True

    def release(self, timeout: float = 5.0) -> None:
        """End the watching thread now and let go of its file (it starts again when somebody next watches):
        for a folder about to be remounted, which the kernel refuses while a file in it is open for writing."""
        with self._guard:
            thread, self._thread = self._thread, None
            self._released = thread
        if thread is not None:
            thread.join(timeout)

    def _watch(self, wakeups: RunWakeups) -> None:
        try:
            connection = sqlite3.connect(self._path, isolation_level=None)
        except sqlite3.Error:
            logger.warning("Cannot watch %s for other processes' writes", self._path, exc_info=True)
            self._failed_at = time.monotonic()
            return
        try:
            version: int | None = None
            known: dict[str, tuple[int, int]] = {}
            current = threading.current_thread()
            while not self._closed and self._released is not current and wakeups.watched_lately():
                now = int(connection.execute("PRAGMA data_version").fetchone()[0])
                if now != version:
                    version = now
                    known = self._wake(connection, wakeups, known)
                time.sleep(POLL_SECONDS)
        except sqlite3.Error:
            logger.warning("Stopped watching %s for other processes' writes", self._path, exc_info=True)
            self._failed_at = time.monotonic()
            wakeups.everything_changed()  # whatever it missed: every watcher looks once
        finally:
            connection.close()

    @staticmethod
    def _wake(
        connection: sqlite3.Connection, wakeups: RunWakeups, known: dict[str, tuple[int, int]]
    ) -> dict[str, tuple[int, int]]:
        """Wake the waiters of every run that moved since ``known``; the runs' counters now."""
        rows = connection.execute(_RUNS, (now_ms() - RECENT_MS,)).fetchall()
        seen: dict[str, tuple[int, int]] = {}
        for run_id, conversation_id, seq, stop in rows:
            seen[run_id] = (int(seq), int(stop))
            before = known.get(run_id)
            if before is None:  # a new run (or the feed's first look: one refresh too many, none missed)
                wakeups.conversation_changed(conversation_id)
            wakeups.run_changed(run_id, int(seq))
            if before is not None and before[1] != int(stop):
                wakeups.run_changed(run_id)
        return seen
