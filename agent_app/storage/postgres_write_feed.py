"""Every process's run writes on one PostgreSQL database, for :class:`~agent_app.runs.wakeups.RunWakeups`.

A write that matters to a watcher sends ``NOTIFY`` in its own transaction (:func:`notify`; PostgreSQL
delivers it when that commits, never for a rollback), carrying only ids: ``e:<run>:<seq>`` a new event,
``r:<run>`` another change of the run (Stop asked, ended), ``c:<conversation>`` a new run. The payloads stay
in the tables. One connection per process listens (psycopg's ``notifies()``) and wakes that process's
waiters; it is opened when somebody first watches and closed once nobody has watched for a while.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg

from agent_app.runs.wakeups import RunWakeups

logger = logging.getLogger(__name__)

CHANNEL = "agent_runs"
WAIT_SECONDS = 1.0
"""How long one wait for notifications lasts before the thread sees whether it should go on."""
RECONNECT_SECONDS = 1.0


def notify(db: psycopg.Connection[Any], kind: str, key: str, seq: int | None = None) -> None:
    """Announce a change, delivered to every listening process when ``db``'s transaction commits."""
    payload = f"{kind}:{key}" if seq is None else f"{kind}:{key}:{seq}"
    db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))


def deliver(wakeups: RunWakeups, payload: str) -> None:
    """One notification's payload as the wake-up it stands for (an unknown shape wakes everyone)."""
    kind, _, rest = payload.partition(":")
    if kind == "e":
        run_id, _, seq = rest.partition(":")
        wakeups.run_changed(run_id, int(seq) if seq.isdigit() else None)
    elif kind == "r":
        wakeups.run_changed(rest)
    elif kind == "c":
        wakeups.conversation_changed(rest)
    else:
        wakeups.everything_changed()


class PostgresWriteFeed:
    """The listening connection of this process and its thread; it runs while somebody watches."""

    def __init__(self, url: str, connect_options: dict[str, Any]) -> None:
        self._url = url
        self._options = {**connect_options, "autocommit": True}
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def ensure_running(self, wakeups: RunWakeups) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive():
            return
        with self._guard:
            if self._closed or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(
                target=self._listen, args=(wakeups,), name="agent-postgres-listener", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._closed = True

    def _listen(self, wakeups: RunWakeups) -> None:
        lost = False
        while not self._closed and wakeups.watched_lately():
            try:
                with psycopg.connect(self._url, **self._options) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    # What was sent before it listened (since a watcher last read, or while the connection was
                    # lost) is not delivered: every watcher looks once.
                    wakeups.everything_changed()
                    lost = False
                    while not self._closed and wakeups.watched_lately():
                        for note in connection.notifies(timeout=WAIT_SECONDS):
                            deliver(wakeups, note.payload)
            except psycopg.Error as exc:
                level = logging.DEBUG if lost else logging.WARNING  # once per outage, not once a second
                logger.log(level, "The run listener lost the database (%s); reconnecting", type(exc).__name__)
                lost = True
                time.sleep(RECONNECT_SECONDS)
