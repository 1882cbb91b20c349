"""One SQLite file, a connection per thread, with eager write transactions and schema migrations.

Streamlit runs each script run in a thread of its own, so every thread gets its own connection (one
connection is never used by two threads at once); WAL lets readers proceed while one writer commits, and
``busy_timeout`` makes concurrent writers wait instead of failing. A thread that ends leaves its connection
to the next thread: opening one (the file, its WAL index, the schema) costs more than a rerun's reads.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from agent_app.runs.wakeups import RunWakeups
from agent_app.storage.base import StorageError
from agent_app.storage.schema import MIGRATIONS, SCHEMA_VERSION
from agent_app.storage.sqlite_write_feed import SqliteWriteFeed

DEFAULT_BUSY_TIMEOUT_MS = 10_000

RecordT = TypeVar("RecordT", bound=BaseModel)
MAX_IDLE_CONNECTIONS = 4
"""Connections kept for the next threads (more threads ending at once close theirs)."""


class _Held:
    """One thread's connection: handed back when the thread ends (its thread-local goes with it)."""

    def __init__(
        self, connection: sqlite3.Connection, read_only: bool, hand_back: Callable[[sqlite3.Connection, bool], None]
    ) -> None:
        self.connection = connection
        self.read_only = read_only
        self._ending = weakref.finalize(self, hand_back, connection, read_only)
        self._ending.atexit = False

    def close(self) -> None:
        self._ending.detach()
        self.connection.close()


class SqliteDatabase:
    """The connections to ``path`` (one per thread); migrated to :data:`SCHEMA_VERSION` when opened."""

    def __init__(self, path: Path, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.path = path
        self._busy_timeout_ms = max(0, int(busy_timeout_ms))
        self._local = threading.local()
        self._idle: list[sqlite3.Connection] = []
        """Left by threads that ended, for the next ones: no lock (``list.append``/``pop`` are atomic),
        because the hand-back runs in a finalizer that can fire inside any thread, even one holding it."""
        self._migrate()
        self.write_feed = SqliteWriteFeed(path)
        """The thread that sees other processes' writes to this file (``data_version``)."""
        self.wakeups = RunWakeups(self.write_feed)
        """This process's wake-ups for runs of this file."""

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use); use it directly for reads.

        On a data folder that turned read-only, a WAL database cannot be opened as usual (SQLite must
        create its ``-shm`` file); it is then opened read-only and immutable, so the page still reads
        what is stored, writes fail with a :class:`StorageError`, and the next write tries again.
        """
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = self._hold()
        return held.connection

    def _hold(self) -> _Held:
        with contextlib.suppress(IndexError):
            return _Held(self._idle.pop(), False, self._hand_back)
        try:
            return _Held(self._open(), False, self._hand_back)
        except sqlite3.Error as exc:
            if "locked" in str(exc):
                raise StorageError(f"The database could not be opened ({exc})") from exc
            return _Held(self._open_read_only(exc), True, self._hand_back)

    def _hand_back(self, connection: sqlite3.Connection, read_only: bool) -> None:
        """A thread ended: its writable connection, outside any transaction, serves the next thread."""
        if read_only or connection.in_transaction:
            connection.close()
            return
        self._idle.append(connection)
        while len(self._idle) > MAX_IDLE_CONNECTIONS:  # more threads ended at once than are kept
            with contextlib.suppress(IndexError):
                self._idle.pop(0).close()

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, isolation_level=None, timeout=self._busy_timeout_ms / 1000, check_same_thread=False
        )
        try:
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            connection.close()
            raise
        return connection

    def _open_read_only(self, cause: sqlite3.Error) -> sqlite3.Connection:
        try:
            uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
            connection = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            connection.row_factory = sqlite3.Row
            connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        except sqlite3.Error:
            raise StorageError(f"The database could not be opened ({cause})") from cause
        return connection

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken eagerly (``BEGIN IMMEDIATE``) so two writers never deadlock.

        A database failure (locked past the busy timeout, disk full, read-only) becomes a
        :class:`StorageError` the page can show; the transaction is rolled back, nothing half-written.
        """
        held: _Held | None = getattr(self._local, "held", None)
        if held is not None and held.read_only:
            self.close()  # opened read-only when the folder was: see whether it is writable again
        connection = self.connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"The database could not be written ({exc})") from exc
        try:
            yield connection
        except BaseException as exc:
            if connection.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
                connection.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"The database could not be written ({exc})") from exc
            raise
        try:
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise StorageError(f"The database could not be written ({exc})") from exc

    def _migrate(self) -> None:
        """Bring the schema to :data:`SCHEMA_VERSION`; a current database is only read (so a data folder
        that turned read-only still opens, and shows what it holds)."""
        if self.schema_version() == SCHEMA_VERSION:
            return
        with self.write() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StorageError(
                    f"The database {self.path} has schema version {version}, newer than this app "
                    f"understands ({SCHEMA_VERSION}); upgrade the app"
                )
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close this thread's connection and those kept for the next threads (others close when their
        threads end)."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is not None:
            held.close()
            self._local.held = None
        while self._idle:
            with contextlib.suppress(IndexError):
                self._idle.pop().close()

    def schema_version(self) -> int:
        return int(self.connection().execute("PRAGMA user_version").fetchone()[0])


def row_as(model: type[RecordT], row: sqlite3.Row) -> RecordT:
    """A row as ``model``: the columns are named like the model's fields, extra columns are ignored."""
    return model.model_validate(dict(row))
