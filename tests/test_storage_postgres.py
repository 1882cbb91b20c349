"""What only the shared database has, on a real PostgreSQL server: processes at once on one database (the
schema upgraded once, one run per conversation), a server that cannot be reached or refuses us, a server
restarted under a running app or run, a statement past the server's timeout, a full disk under the
database, a database turned read-only, and the URL's password kept out of every message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from agent_app.runs.manager import ThreadRunManager
from agent_app.runs.models import BUSY_MESSAGE
from agent_app.storage import PostgresStorage, StorageError
from agent_app.storage.postgres_schema import SCHEMA_VERSION
from agent_app.types import ChatMessage, now_ms
from tests.hostile_support import fill, requires_root, tmpfs
from tests.run_support import wait_until
from tests.storage_backends import PostgresForTests
from tests.test_runs import WAIT, GatedJob
from testsupport.postgres_server import OS_USER
from testsupport.streamlit_server import free_port

ROOT = Path(__file__).resolve().parent.parent


def at_once(*commands: list[str]) -> list[dict[str, object]]:
    """Run each ``tests.storage_process`` command in its own process; once all are ready, all act at once."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.storage_process", *command],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for command in commands
    ]
    try:
        for process in processes:
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_two_processes_starting_a_run_in_one_conversation_at_once_start_exactly_one(
    postgres_url: str, tmp_path: Path
) -> None:
    storage = PostgresStorage(tmp_path / "data", postgres_url)
    chat = storage.create_conversation(storage.create_project("p").id)
    command = ["start-run", str(tmp_path / "data"), postgres_url, chat.id]
    try:
        results = at_once(command, command)
        started = [r for r in results if "started" in r]
        busy = [r for r in results if "busy" in r]
        assert len(started) == 1 and len(busy) == 1, results
        assert busy[0]["busy"] == BUSY_MESSAGE  # today's clear refusal
        active = storage.run_store().active_run(chat.id)
        assert active is not None and active.id == started[0]["started"]
        assert [m.id for m in storage.load_messages(chat.id)] == [started[0]["question"]]  # the refused one: nothing
    finally:
        storage.close_pool()


def test_processes_starting_on_an_empty_database_at_once_upgrade_it_once(
    postgres_server: PostgresForTests, tmp_path: Path
) -> None:
    name = postgres_server.server.create_database()  # empty: no schema yet
    url = postgres_server.server.url(name)
    try:
        command = ["open", str(tmp_path / "data"), url]
        assert at_once(command, command, command) == [{"opened": True, "version": SCHEMA_VERSION}] * 3
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        postgres_server.server.drop_database(name)


def test_a_server_that_cannot_be_reached_fails_at_once_in_the_pages_words(tmp_path: Path) -> None:
    url = f"postgresql://agent:never-shown-pw@127.0.0.1:{free_port()}/agent"
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"could not be opened \(the database server cannot be reached\)") as raised:
        PostgresStorage(tmp_path / "data", url)
    assert time.monotonic() - started < 3
    assert "never-shown-pw" not in str(raised.value) and raised.value.__cause__ is None


def test_a_wrong_password_or_database_is_refused_and_said_without_the_password(
    postgres_server: PostgresForTests, tmp_path: Path
) -> None:
    server = postgres_server.server
    wrong = server.url(postgres_server.template).replace(server.password, "wrong-pw-never-shown")
    with pytest.raises(StorageError, match="password authentication failed") as raised:
        PostgresStorage(tmp_path / "data", wrong)
    assert "wrong-pw-never-shown" not in str(raised.value) and server.password not in str(raised.value)
    with pytest.raises(StorageError, match='database "no_such_db" does not exist'):
        PostgresStorage(tmp_path / "data", server.url("no_such_db"))


def test_a_server_restarted_under_the_app_loses_nothing_committed_and_is_used_again(
    postgres_server: PostgresForTests, postgres_url: str, tmp_path: Path
) -> None:
    storage = PostgresStorage(tmp_path / "data", postgres_url)
    try:
        chat = storage.create_conversation(storage.create_project("p").id)
        storage.append_message(chat.id, ChatMessage(role="user", content="before the restart"))
        postgres_server.server.restart()  # every pooled connection is cut
        storage.append_message(chat.id, ChatMessage(role="assistant", content="after it"))
        assert [m.content for m in storage.load_messages(chat.id)] == ["before the restart", "after it"]
        run = storage.run_store().create_run(chat.id, None, [], owner="a", lease_until=now_ms() + 60_000)
        assert storage.run_store().active_run(chat.id) == run
    finally:
        storage.close_pool()


def test_the_run_listener_comes_back_after_a_server_restart_and_wakes_for_another_process(
    postgres_server: PostgresForTests, postgres_url: str, tmp_path: Path
) -> None:
    """The watching process's LISTEN connection is cut by the restart: a run another storage (another process's
    pool) starts after it still wakes the watcher (by its notification, or by the reconnect that makes every
    watcher look once, what was sent meanwhile being lost)."""
    watching = PostgresStorage(tmp_path / "data", postgres_url)
    writing = PostgresStorage(tmp_path / "data", postgres_url)
    try:
        chat = watching.create_conversation(watching.create_project("p").id)
        wakeups = watching.run_store().wakeups
        before = wakeups.conversation_version(chat.id)
        wait_until(lambda: wakeups.conversation_version(chat.id) != before, WAIT, "the listener never listened")
        postgres_server.server.restart()  # the listener's connection is cut with the rest
        seen = wakeups.conversation_version(chat.id)
        run = writing.run_store().create_run(chat.id, None, [], owner="other", lease_until=now_ms() + 60_000)
        wait_until(lambda: wakeups.conversation_version(chat.id) != seen, WAIT, "the new run woke nobody")
        assert watching.run_store().active_run(chat.id) == run
    finally:
        watching.close_pool()
        writing.close_pool()


def test_a_statement_past_the_servers_statement_timeout_is_said_and_commits_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    """A deploy's URL may carry ``options=-c statement_timeout=...``: a write stuck behind another writer
    longer than that is cancelled by the server, said in the page's words, and nothing of it is kept."""
    slow = f"{postgres_url}?options=-c%20statement_timeout%3D150"
    storage = PostgresStorage(tmp_path / "data", slow, busy_timeout_ms=5_000)
    try:
        chat = storage.create_conversation(storage.create_project("p").id)
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("LOCK TABLE messages IN EXCLUSIVE MODE")
            started = time.monotonic()
            with pytest.raises(StorageError, match="took too long and was cancelled"):
                storage.append_message(chat.id, ChatMessage(role="user", content="stuck"))
            assert time.monotonic() - started < 2  # the statement timeout, not the 5 s busy timeout
        assert storage.load_messages(chat.id) == []
        storage.append_message(chat.id, ChatMessage(role="user", content="later"))
        assert [m.content for m in storage.load_messages(chat.id)] == ["later"]
    finally:
        storage.close_pool()


def test_a_run_going_while_the_server_restarts_ends_as_it_would_have(
    postgres_server: PostgresForTests, postgres_url: str, tmp_path: Path
) -> None:
    """Its question was committed before the restart and is kept; its status event, end and state after it
    are written on new connections (the lease's heartbeat misses a beat or two and catches up)."""
    storage = PostgresStorage(tmp_path / "data", postgres_url)
    chat = storage.create_conversation(storage.create_project("p").id)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    try:
        run = manager.start(chat.id, None, ChatMessage(role="user", content="Asked before the restart"))
        wait_until(lambda: job.started == [run.id], WAIT)
        postgres_server.server.restart()
        job.release.set()
        wait_until(lambda: storage.run_store().get_run(run.id).state == "answered", WAIT)  # type: ignore[union-attr]
        wait_until(lambda: [e.kind for e in storage.run_store().events(run.id)] == ["status", "end"], WAIT)
        assert [m.content for m in storage.load_messages(chat.id)] == ["Asked before the restart"]
    finally:
        manager.close()
        storage.close_pool()


@requires_root
def test_a_full_disk_under_the_database_is_said_and_nothing_committed_is_lost(
    postgres_server: PostgresForTests, tmp_path: Path
) -> None:
    """The database's files on a small disk of their own (a tablespace on a tmpfs), filled to the last byte:
    a write is refused as out of space with nothing of it kept; once space is freed, writes go on."""
    server = postgres_server.server
    mount = Path(tempfile.mkdtemp(prefix="agent-pg-space-"))  # under /tmp: the postgres user reaches it
    name = f"full_{os.getpid()}"
    try:
        with tmpfs(mount, size_kb=24 * 1024):
            location = mount / "tablespace"
            location.mkdir()
            shutil.chown(location, user=OS_USER)
            server.execute(f"CREATE TABLESPACE small LOCATION '{location}'")
            server.execute(f'CREATE DATABASE "{name}" TEMPLATE "{postgres_server.template}" TABLESPACE small')
            storage = PostgresStorage(tmp_path / "data", server.url(name))
            try:
                chat = storage.create_conversation(storage.create_project("p").id)
                storage.append_message(chat.id, ChatMessage(role="user", content="kept"))
                filler = fill(mount)
                big = ChatMessage(role="assistant", content=os.urandom(400_000).hex())  # new pages for its text
                with pytest.raises(StorageError, match=r"could not be written \(the database server is out of space\)"):
                    storage.append_message(chat.id, big)
                assert [m.content for m in storage.load_messages(chat.id)] == ["kept"]
                filler.unlink()
                storage.append_message(chat.id, big)
                assert [m.content for m in storage.load_messages(chat.id)] == ["kept", big.content]
            finally:
                storage.close_pool()
                server.drop_database(name)
                server.execute("DROP TABLESPACE IF EXISTS small")
    finally:
        shutil.rmtree(mount, ignore_errors=True)


def test_a_database_turned_read_only_still_reads_and_says_why_it_cannot_write(
    postgres_server: PostgresForTests, postgres_url: str, tmp_path: Path
) -> None:
    """What a hot standby or an administrator's ``default_transaction_read_only`` gives: the page still shows
    what is stored, and a write says the database is read-only."""
    storage = PostgresStorage(tmp_path / "data", postgres_url)
    try:
        chat = storage.create_conversation(storage.create_project("p").id)
        storage.append_message(chat.id, ChatMessage(role="user", content="kept"))
        database = postgres_url.rsplit("/", 1)[1]
        postgres_server.server.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
        reopened = PostgresStorage(tmp_path / "data", postgres_url)  # new sessions read the setting
        try:
            assert [m.content for m in reopened.load_messages(chat.id)] == ["kept"]
            with pytest.raises(StorageError, match=r"could not be written \(the database is read-only\)"):
                reopened.append_message(chat.id, ChatMessage(role="user", content="refused"))
        finally:
            reopened.close_pool()
    finally:
        storage.close_pool()
