"""Wake-ups of runs across processes, on both backends (ids ``sqlite`` and ``postgres``): a run another process
starts and the events it writes move this process's versions (LISTEN/NOTIFY on PostgreSQL, ``data_version`` on
SQLite), this process's own writes move them at once, and the echo of a write already seen moves nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.runs.events import TextEvent
from agent_app.runs.wakeups import RunWakeups
from agent_app.types import now_ms
from tests.run_support import wait_until
from tests.storage_backends import BACKENDS, Backend, backend_for

WAIT = 20.0

OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_app.runs.events import TextEvent
    from agent_app.storage import PostgresStorage, SqliteStorage
    from agent_app.types import now_ms

    data_dir, url, conversation_id = sys.argv[1], sys.argv[2], sys.argv[3]
    storage = PostgresStorage(Path(data_dir), url) if url else SqliteStorage(Path(data_dir))
    runs = storage.run_store()
    run = runs.create_run(conversation_id, None, [], owner="other", lease_until=now_ms() + 60_000)
    print(run.id, flush=True)
    for delta in ("Hel", "lo"):
        runs.append_event(run.id, TextEvent(delta=delta))
    """
)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def test_a_run_another_process_starts_and_streams_wakes_this_process(backend: Backend) -> None:
    storage = backend.open()
    chat = storage.create_conversation(storage.create_project("p").id).id
    wakeups = storage.run_store().wakeups
    before = wakeups.conversation_version(chat)  # a look: this process's feed starts watching
    other = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(backend.data_dir), backend.database_url or "", chat],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    run_id = other.stdout.strip()
    wait_until(lambda: wakeups.conversation_version(chat) != before, WAIT, "the new run woke nobody")
    wait_until(lambda: wakeups.run_version(run_id) > 0, WAIT, "its events woke nobody")
    assert [e.data for e in storage.run_store().events(run_id)] == [TextEvent(delta="Hel"), TextEvent(delta="lo")]


def test_this_process_writes_wake_at_once(backend: Backend) -> None:
    storage = backend.open()
    chat = storage.create_conversation(storage.create_project("p").id).id
    runs = storage.run_store()
    before = runs.wakeups.conversation_version(chat)
    run = runs.create_run(chat, None, [], owner="me", lease_until=now_ms() + 60_000)
    assert runs.wakeups.conversation_version(chat) > before  # at once: no wait for the feed
    seen = runs.wakeups.run_version(run.id)
    runs.append_event(run.id, TextEvent(delta="Hi"))
    assert runs.wakeups.run_version(run.id) > seen


def test_a_waiter_wakes_when_the_run_moves() -> None:
    wakeups = RunWakeups()
    assert wakeups.wait_run("r", 0, 0.01) == 0  # nothing new: back after the timeout
    wakeups.run_changed("r", 1)
    assert wakeups.wait_run("r", 0, 5.0) == 1
    wakeups.run_changed("r", 1)
    assert wakeups.run_version("r") == 1
    wakeups.everything_changed()
    assert wakeups.run_version("r") == 2
