"""A PostgreSQL database behind a psycopg connection pool, with write transactions; upgraded when opened.

Each read or write borrows a pooled connection (autocommit: one statement is its own transaction; a write
opens ``conn.transaction()``), so page sessions, runs and the media route of one process share a few
connections, and several processes can share the server. Failures become the same :class:`StorageError`
the SQLite backend raises, worded for the page (busy, unreachable, full, read-only), never with the URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import psycopg
from psycopg import errors
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import BaseModel

from agent_app.runs.wakeups import RunWakeups
from agent_app.storage.base import StorageError
from agent_app.storage.postgres_schema import stored_version, upgrade
from agent_app.storage.postgres_write_feed import PostgresWriteFeed

DEFAULT_MAX_CONNECTIONS = 10
CONNECT_TIMEOUT_SECONDS = 5

RecordT = TypeVar("RecordT", bound=BaseModel)
Connection = psycopg.Connection[DictRow]


UNREACHABLE = "the database server cannot be reached"
_REASONS: tuple[tuple[tuple[type[psycopg.Error], ...], str], ...] = (
    ((PoolTimeout, errors.ConnectionTimeout), "the database server did not answer in time"),
    (
        (errors.LockNotAvailable, errors.SerializationFailure, errors.DeadlockDetected),
        "the database is busy: another write held it too long (setting AGENT_DB_BUSY_TIMEOUT_MS)",
    ),
    ((errors.QueryCanceled,), "a database statement took too long and was cancelled"),
    ((errors.DiskFull, errors.InsufficientResources, errors.OutOfMemory), "the database server is out of space"),
    ((errors.ReadOnlySqlTransaction,), "the database is read-only"),
    ((errors.OperatorIntervention, errors.ConnectionException), UNREACHABLE),
)
"""The page's words for each kind of failure: the kinds SQLite's errors have (busy, full, read-only) and the
server's own (unreachable or restarting, too slow)."""


def failure_reason(exc: psycopg.Error) -> str:
    """What went wrong, in the page's words; the server's own message only for the rest (never the URL)."""
    for kinds, reason in _REASONS:
        if isinstance(exc, kinds):
            return reason
    if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:  # libpq's own: no server's answer
        _, fatal, refusal = str(exc).partition("FATAL:")
        return f"the database server refused the connection: {refusal.strip()}" if fatal else UNREACHABLE
    primary = exc.diag.message_primary if exc.sqlstate else None
    return primary or type(exc).__name__


def storage_error(exc: psycopg.Error, doing: str) -> StorageError:
    return StorageError(f"The database could not be {doing} ({failure_reason(exc)})")


class PostgresDatabase:
    """The pool of connections to ``url``; the schema is upgraded to :data:`SCHEMA_VERSION` when opened.

    ``busy_timeout_ms`` bounds both the wait for a pooled connection and the wait for another writer's
    lock (``lock_timeout``), like SQLite's busy timeout. Raises :class:`StorageError` when the server
    cannot be reached or its schema is newer than this app's.
    """

    def __init__(self, url: str, busy_timeout_ms: int, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self._lock_timeout_ms = max(0, int(busy_timeout_ms))
        options: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "application_name": "agent-session-shell",
        }
        try:  # one connection first: a refused or unknown server fails at once, and in its own words
            with psycopg.connect(url, **options) as first:
                self._configure(first)
                upgrade(first)
        except psycopg.Error as exc:
            raise storage_error(exc, "opened") from None
        wait_seconds = max(self._lock_timeout_ms / 1000, CONNECT_TIMEOUT_SECONDS)
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            kwargs=options,
            min_size=1,
            max_size=max_connections,
            open=False,
            configure=self._configure,
            check=ConnectionPool.check_connection,  # a server restart leaves dead connections: replaced
            timeout=wait_seconds,
        )
        try:
            self._pool.open(wait=True, timeout=wait_seconds)
        except PoolTimeout as exc:
            self._pool.close()
            raise storage_error(exc, "opened") from None
        self.wakeups = RunWakeups(PostgresWriteFeed(url, options))
        """This process's wake-ups for runs of this database (every process's writes, by LISTEN/NOTIFY)."""

    def _configure(self, connection: Connection) -> None:
        # 0 would mean "wait forever" to PostgreSQL; the busy timeout's 0 means "do not wait".
        connection.execute(f"SET lock_timeout = {max(self._lock_timeout_ms, 1)}")

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A pooled connection for reads (each statement its own transaction)."""
        try:
            with self._pool.connection() as connection:
                yield connection
        except psycopg.Error as exc:
            raise storage_error(exc, "read") from exc

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back (nothing half-written) when it
        raises; a database failure becomes a :class:`StorageError` the page can show."""
        try:
            with self._pool.connection() as connection, connection.transaction():
                yield connection
        except psycopg.Error as exc:
            raise storage_error(exc, "written") from exc

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> DictRow | None:
        """The first row ``sql`` reads, if any."""
        with self.read() as db:
            return db.execute(sql, params).fetchone()

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[DictRow]:
        with self.read() as db:
            return db.execute(sql, params).fetchall()

    def schema_version(self) -> int:
        """The stored version; 0 for a database this app never opened."""
        with self.read() as db:
            return stored_version(db)

    def close_pool(self) -> None:
        """Close every pooled connection (at the end of a process or a test); unusable afterwards."""
        self._pool.close()
        self.wakeups.close()


def row_as(model: type[RecordT], row: DictRow) -> RecordT:
    """A row as ``model``: the columns are named like the model's fields, extra columns are ignored."""
    return model.model_validate(row)
