"""Wake-ups for whoever waits on a run or a conversation in this process: version counters, bumped when a
write commits, so a watching tab or request learns of news by comparing two integers, with no query.

Writes of this process bump the counters as they commit (:class:`~agent_app.runs.run_store.RunStore`
implementations call :meth:`RunWakeups.run_changed` and :meth:`RunWakeups.conversation_changed`). Writes of
other processes arrive through a :class:`WriteFeed` of the database: PostgreSQL's LISTEN/NOTIFY (ids only,
the payloads stay in the tables), SQLite's ``PRAGMA data_version`` read by one thread per process. The feed
runs only while somebody looked at a version lately, so a process nobody watches from costs nothing.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Protocol

WATCH_SECONDS = 10.0
"""A feed keeps going this long after the last look at a version (a tab's refresh looks several times a
second while it shows a run or a conversation)."""
_KNOWN_RUNS = 4096
"""Runs whose last event number is remembered, to tell news from the echo of this process's own write."""


class WriteFeed(Protocol):
    """What tells a :class:`RunWakeups` about other processes' writes."""

    def ensure_running(self, wakeups: RunWakeups) -> None:
        """Start (or keep) feeding ``wakeups``; called at every look, so it must be cheap."""
        ...

    def close(self) -> None: ...


class RunWakeups:
    """Version counters per run and per conversation; :meth:`wait` blocks a thread until one moves."""

    def __init__(self, feed: WriteFeed | None = None) -> None:
        self._feed = feed
        self._changed = threading.Condition()
        self._versions: dict[str, int] = {}
        self._epoch = 0
        """Bumped when the feed may have missed writes (it reconnected): every version moves."""
        self._last_seq: OrderedDict[str, int] = OrderedDict()
        self.last_look = 0.0

    def run_changed(self, run_id: str, seq: int | None = None) -> None:
        """The run has news: event ``seq`` (ignored when already known: the echo of a write seen before), or
        another change (``None``: a Stop asked, the run ended)."""
        with self._changed:
            if seq is not None:
                if self._last_seq.get(run_id, 0) >= seq:
                    return
                self._last_seq[run_id] = seq
                self._last_seq.move_to_end(run_id)
                while len(self._last_seq) > _KNOWN_RUNS:
                    self._last_seq.popitem(last=False)
            self._bump("run:" + run_id)

    def conversation_changed(self, conversation_id: str) -> None:
        """A run of the conversation started."""
        with self._changed:
            self._bump("conversation:" + conversation_id)

    def everything_changed(self) -> None:
        with self._changed:
            self._epoch += 1
            self._changed.notify_all()

    def _bump(self, key: str) -> None:
        self._versions[key] = self._versions.get(key, 0) + 1
        self._changed.notify_all()

    def run_version(self, run_id: str) -> int:
        return self._version("run:" + run_id)

    def conversation_version(self, conversation_id: str) -> int:
        return self._version("conversation:" + conversation_id)

    def _version(self, key: str) -> int:
        self.last_look = time.monotonic()
        if self._feed is not None:
            self._feed.ensure_running(self)
        with self._changed:
            return self._epoch + self._versions.get(key, 0)

    def wait_run(self, run_id: str, seen: int, timeout: float) -> int:
        """The run's version once it differs from ``seen``, or after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        version = self.run_version(run_id)
        with self._changed:
            while version == seen and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
                version = self._epoch + self._versions.get("run:" + run_id, 0)
        return version

    def watched_lately(self) -> bool:
        """Whether a feed should go on: somebody looked at a version in the last :data:`WATCH_SECONDS`."""
        return time.monotonic() - self.last_look < WATCH_SECONDS

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
