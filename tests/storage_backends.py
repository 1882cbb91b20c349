"""The two storage backends as one fixture: the contract tests take ``backend`` (ids ``sqlite`` and
``postgres``) and open storages through it, so one test checks both implementations.

PostgreSQL is a real server the session starts once (:mod:`testsupport.postgres_server`); each test gets
its own database, copied from a template that already holds the current schema.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import psycopg
import pytest

from agent_app.storage import PostgresStorage, SqliteStorage, Storage
from agent_app.storage.postgres_database import PostgresDatabase
from agent_app.storage.sqlite_database import DEFAULT_BUSY_TIMEOUT_MS
from agent_app.types import MediaLibrary
from testsupport.postgres_server import PostgresServer, running_postgres

AnyStorage: TypeAlias = SqliteStorage | PostgresStorage
BackendName: TypeAlias = Literal["sqlite", "postgres"]
BACKENDS: tuple[BackendName, ...] = ("sqlite", "postgres")
TEMPLATE = "agent_template"


@dataclass
class Backend:
    """Where a test's storage lives: its data folder (media, and SQLite's file) and, for PostgreSQL, its database."""

    name: BackendName
    data_dir: Path
    database_url: str | None = None
    _opened: list[AnyStorage] = field(default_factory=list)

    def open(self, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> AnyStorage:
        """A storage on this backend's data (another one is what another process would open)."""
        storage: AnyStorage
        if self.database_url is None:
            storage = SqliteStorage(self.data_dir, busy_timeout_ms=busy_timeout_ms)
        else:
            storage = PostgresStorage(self.data_dir, self.database_url, busy_timeout_ms=busy_timeout_ms)
        self._opened.append(storage)
        return storage

    def close_all(self) -> None:
        for storage in self._opened:
            storage.close()
            if isinstance(storage, PostgresStorage):
                storage.close_pool()


@dataclass(frozen=True)
class PostgresForTests:
    server: PostgresServer
    template: str


def postgres_for_tests() -> Iterator[PostgresForTests]:
    """The session's server, with a template database migrated to the current schema."""
    with running_postgres() as server:
        server.execute(f'CREATE DATABASE "{TEMPLATE}"')
        database = PostgresDatabase(server.url(TEMPLATE), DEFAULT_BUSY_TIMEOUT_MS)
        database.close_pool()
        server.execute(f'ALTER DATABASE "{TEMPLATE}" WITH IS_TEMPLATE true')
        yield PostgresForTests(server, TEMPLATE)


def fresh_database_url(postgres: PostgresForTests) -> Iterator[str]:
    """A database of its own for one test (from the template), dropped after it."""
    name = postgres.server.create_database(postgres.template)
    try:
        yield postgres.server.url(name)
    finally:
        postgres.server.drop_database(name)


def backend_for(request: pytest.FixtureRequest, name: BackendName, data_dir: Path) -> Backend:
    if name == "postgres":
        return Backend(name, data_dir, request.getfixturevalue("postgres_url"))
    return Backend(name, data_dir)


def raw_rows(backend: Backend, sql: str) -> list[tuple[object, ...]]:
    """What ``sql`` reads from the backend's database directly (not through our code): the test's own look."""
    if backend.database_url is None:
        with contextlib.closing(sqlite3.connect(backend.data_dir / "agent.sqlite3")) as connection:
            return connection.execute(sql).fetchall()
    with psycopg.connect(backend.database_url) as connection:
        return connection.execute(sql.encode()).fetchall()


def set_schema_version(backend: Backend, version: int) -> None:
    """Stamp the database with ``version``, as a newer (or older) app would have left it."""
    if backend.database_url is None:
        with contextlib.closing(sqlite3.connect(backend.data_dir / "agent.sqlite3")) as connection:
            connection.execute(f"PRAGMA user_version = {int(version)}")
        return
    with psycopg.connect(backend.database_url, autocommit=True) as connection:
        connection.execute("UPDATE schema_version SET version = %s", (version,))


@contextlib.contextmanager
def another_writer_holding_the_lock(backend: Backend) -> Iterator[None]:
    """Another process in the middle of a write that keeps the messages from being written until it ends."""
    if backend.database_url is None:
        blocker = sqlite3.connect(backend.data_dir / "agent.sqlite3", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        return
    with psycopg.connect(backend.database_url) as connection, connection.transaction():
        connection.execute("LOCK TABLE messages IN EXCLUSIVE MODE")
        yield


def insert_raw(backend: Backend, sql: str, rows: list[tuple[object, ...]]) -> None:
    """Write ``rows`` with ``sql`` (``?`` placeholders) straight into the backend's database, as another
    release of the app would have (not through our code)."""
    if backend.database_url is None:
        with contextlib.closing(sqlite3.connect(backend.data_dir / "agent.sqlite3")) as sqlite, sqlite:
            sqlite.executemany(sql, rows)
        return
    with psycopg.connect(backend.database_url) as postgres, postgres.cursor() as cursor:
        cursor.executemany(sql.replace("?", "%s").encode(), rows)


def stored_path(storage: Storage | MediaLibrary, asset_id: str) -> Path | None:
    """Where an asset's file is on a local-disk media store (its ``media_file`` outlives the ``with`` there)."""
    with storage.media_file(asset_id) as path:
        return path
