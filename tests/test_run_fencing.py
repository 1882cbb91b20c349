"""Fencing and leases across processes (issue 24, findings 5 and 8), on both backends where a second process
is involved: a run paused past its lease (SIGSTOP) while another process marks it interrupted and Retry
answers writes nothing when it resumes (SIGCONT); a held ``BEGIN IMMEDIATE`` longer than the busy timeout
during a run does not make the finished run read as "the server stopped"."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.registry import ToolRegistry
from agent_app.runs.events import EndEvent, StatusEvent
from agent_app.runs.execution import lease_ms_for
from agent_app.runs.manager import RunControl, RunEnd, ThreadRunManager
from agent_app.runs.models import Run
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, now_ms
from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.streams import StreamScript
from tests.run_processes import run_process
from tests.run_support import finished, manager_for, wait_until
from tests.storage_backends import BACKENDS, Backend, backend_for

WAIT = 30.0
PAUSED_LEASE_MS = 1_500
"""The paused process's lease: short, so the test waits little for it to run out."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def _env(backend: Backend) -> dict[str, str]:
    env = {"AGENT_DATA_DIR": str(backend.data_dir)}
    if backend.database_url is not None:
        env["AGENT_DATABASE_URL"] = backend.database_url
    return env


def test_a_run_paused_past_its_lease_writes_nothing_when_it_resumes(
    backend: Backend, openai_llm: FakeLLMServer, tmp_path: Path
) -> None:
    storage = backend.open()
    chat = storage.create_conversation(storage.create_project("p").id).id
    slow = StreamScript(pieces=40, delay_seconds=0.1)
    openai_llm.chat.push(streamed(openai_text("The first server's answer, which must never be stored."), slow))
    with run_process(_env(backend), tmp_path, lease_ms=PAUSED_LEASE_MS, heartbeat=0.1) as first:
        run_id = first.start_run(chat, "A question", WAIT)
        wait_until(lambda: any(e.kind == "text" for e in storage.run_store().events(run_id)), WAIT, "no text")
        first.signal(signal.SIGSTOP)
        try:
            run = storage.run_store().get_run(run_id)
            wait_until(lambda: now_ms() > run.lease_until, WAIT)  # type: ignore[union-attr]
            here = manager_for(storage, ToolRegistry())
            interrupted = here.latest_run(chat)
            assert interrupted is not None and interrupted.id == run_id and interrupted.state == "interrupted"
            openai_llm.chat.push(openai_text("The second server's answer."))
            assert finished(here, here.start(chat, None), WAIT).state == "answered"  # Retry, on this process
        finally:
            first.signal(signal.SIGCONT)
        ended = first.wait_for(lambda line: line.get("ended") == run_id, WAIT)
    assert ended["lost"] is True
    stored = storage.load_messages(chat)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "A question"),
        ("assistant", "The second server's answer."),
    ]
    old = storage.run_store().get_run(run_id)
    assert old is not None and old.state == "interrupted"
    assert not [e for e in storage.run_store().events(run_id) if e.kind in ("end", "message")]


def test_a_lock_held_past_the_busy_timeout_does_not_read_as_a_stopped_server(tmp_path: Path) -> None:
    """Finding 8: the run ends while another connection holds ``BEGIN IMMEDIATE`` for longer than the busy
    timeout. Its end is refused, so this process keeps its lease and records the end once the lock goes;
    another process reading meanwhile sees a live run, never an interrupted one."""
    busy_timeout_ms = 300
    lease_ms = lease_ms_for(busy_timeout_ms, heartbeat_seconds=0.05)
    assert lease_ms > busy_timeout_ms + 2 * 50
    storage = SqliteStorage(tmp_path / "data", busy_timeout_ms=busy_timeout_ms)
    chat = storage.create_conversation(storage.create_project("p").id).id
    blocker = sqlite3.connect(tmp_path / "data" / "agent.sqlite3", isolation_level=None, check_same_thread=False)
    ended = []

    def answered_while_locked(run: Run, control: RunControl) -> RunEnd:
        control.emit(StatusEvent(status="responding"))
        storage.append_message(chat, ChatMessage(role="assistant", content="Answer."))
        blocker.execute("BEGIN IMMEDIATE")  # another writer takes the database as the run ends
        ended.append(now_ms())
        return RunEnd("answered")

    manager = ThreadRunManager(storage, answered_while_locked, lease_ms=lease_ms, heartbeat_seconds=0.05)
    reader = SqliteStorage(tmp_path / "data", busy_timeout_ms=busy_timeout_ms)  # as another process reads
    try:
        run = manager.start(chat, None, ChatMessage(role="user", content="A question"))
        wait_until(lambda: manager.get(run.id).state == "answered", WAIT)  # type: ignore[union-attr]
        # Held well past the busy timeout: the end's write and the lease renewals waited it out and failed.
        wait_until(lambda: now_ms() > ended[0] + 1.5 * busy_timeout_ms + 2 * 50, WAIT)
        seen = reader.run_store().active_run(chat)  # the other process: a live run, not a dead server
        assert seen is not None and seen.id == run.id and seen.state == "running"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    wait_until(lambda: reader.run_store().get_run(run.id).state == "answered", WAIT)  # type: ignore[union-attr]
    assert [e.data for e in reader.run_store().events(run.id)][-1] == EndEvent(state="answered")
    assert manager.latest_run(chat).state == "answered"  # type: ignore[union-attr]
    reader.close()
    storage.close()
