"""SQLite connections across threads: Streamlit runs every rerun in a thread of its own, so a thread that
ends leaves its connection to the next one, and that hand-back (a finalizer, run in whichever thread
drops the last reference) must never wait on anything another thread holds."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.storage.sqlite_database import SqliteDatabase


@pytest.fixture
def database(tmp_path: Path) -> Iterator[SqliteDatabase]:
    db = SqliteDatabase(tmp_path / "agent.db")
    yield db
    db.close()
    db.write_feed.close()


def in_a_thread(db: SqliteDatabase) -> int:
    """The id of the connection a new thread gets, after it has read through it."""
    seen: list[int] = []

    def read() -> None:
        connection = db.connection()
        connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        seen.append(id(connection))

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    return seen[0]


def test_a_thread_that_ends_leaves_its_connection_to_the_next_thread(database: SqliteDatabase) -> None:
    first = in_a_thread(database)
    gc.collect()
    assert {in_a_thread(database) for _ in range(5)} == {first}


def test_threads_ending_while_others_take_connections_never_wait_on_each_other(database: SqliteDatabase) -> None:
    # Collections on nearly every allocation make finalizers fire inside other threads' hand-off code.
    thresholds = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        for _ in range(10):
            threads = [threading.Thread(target=in_a_thread, args=(database,)) for _ in range(12)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=20)
            assert not any(thread.is_alive() for thread in threads), "a thread hung taking or handing back"
    finally:
        gc.set_threshold(*thresholds)
    gc.collect()
    assert database.connection().execute("PRAGMA user_version").fetchone()[0] >= 1
