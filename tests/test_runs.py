"""Runs in storage and the thread run manager: one active run per conversation enforced by the database,
leases that tell a dead run from a live one, Stop through storage, the bounded executor."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.runs.manager import RunControl, RunEnd, ThreadRunManager
from agent_app.runs.models import Run, RunBusyError
from agent_app.runs.recovery import INTERRUPTED_ERROR
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, ToolCall, now_ms

WAIT = 10.0


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[SqliteStorage]:
    store = SqliteStorage(tmp_path / "data")
    yield store
    store.close()


def conversation(storage: SqliteStorage) -> str:
    return storage.create_conversation(storage.create_project("p").id).id


def wait_until(condition: object, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class GatedJob:
    """A job that records an event, then waits until released or stopped."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[str] = []

    def __call__(self, run: Run, control: RunControl) -> RunEnd:
        self.started.append(run.id)
        control.emit("status", {"status": "sending"})
        while not self.release.wait(0.01):
            if control.should_stop():
                return RunEnd("stopped")
        return RunEnd("answered")


def test_second_active_run_in_a_conversation_is_refused_by_the_database(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    runs = storage.run_store()
    first = runs.create_run(
        chat, None, [ChatMessage(role="user", content="one")], owner="a", lease_until=now_ms() + 60_000
    )
    assert first.state == "queued" and runs.active_run(chat) == first
    with pytest.raises(RunBusyError, match="still answering"):
        runs.create_run(chat, None, [ChatMessage(role="user", content="two")], owner="b", lease_until=now_ms() + 60_000)
    assert [m.content for m in storage.load_messages(chat)] == ["one"]  # the refused question was not written
    assert runs.finish_run(first.id, "answered")
    assert not runs.finish_run(first.id, "error")  # already over: unchanged
    second = runs.create_run(chat, None, [], owner="b", lease_until=now_ms() + 60_000)
    assert runs.active_run(chat) == second
    assert runs.latest_run(chat) == second


def test_a_run_whose_lease_ran_out_is_interrupted_and_no_longer_blocks(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    runs = storage.run_store()
    dead = runs.create_run(chat, None, [], owner="killed", lease_until=now_ms() - 1)
    assert runs.active_run(chat) is None
    interrupted = runs.get_run(dead.id)
    assert interrupted is not None and interrupted.state == "interrupted" and interrupted.finished_at is not None
    stale = runs.create_run(chat, None, [], owner="killed", lease_until=now_ms() - 1)
    fresh = runs.create_run(chat, None, [], owner="alive", lease_until=now_ms() + 60_000)  # sweeps the stale one
    assert runs.get_run(stale.id).state == "interrupted"  # type: ignore[union-attr]
    assert runs.active_run(chat) == fresh


def test_events_are_numbered_and_read_after_a_sequence_number(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    runs = storage.run_store()
    run = runs.create_run(chat, None, [], owner="a", lease_until=now_ms() + 60_000)
    assert [runs.append_event(run.id, "text", {"delta": d}) for d in ("Hel", "lo", " ✓")] == [1, 2, 3]
    assert [e.data["delta"] for e in runs.events(run.id)] == ["Hel", "lo", " ✓"]
    assert [e.seq for e in runs.events(run.id, after_seq=2)] == [3]


def test_manager_starts_at_once_and_stop_ends_the_run(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    run = manager.start(chat, None, ChatMessage(role="user", content="Hi"))  # returns while the job waits
    wait_until(lambda: job.started == [run.id])
    assert manager.active_run(chat) is not None and manager.active_run(chat).state == "running"  # type: ignore[union-attr]
    with pytest.raises(RunBusyError):
        manager.start(chat, None, ChatMessage(role="user", content="meanwhile"))
    assert manager.stop(run.id)
    wait_until(lambda: manager.active_run(chat) is None)
    ended = manager.get(run.id)
    assert ended is not None and ended.state == "stopped" and ended.stop_requested
    assert [(e.kind, e.data) for e in manager.events(run.id)] == [
        ("status", {"status": "sending"}),
        ("end", {"state": "stopped"}),
    ]
    assert [m.content for m in storage.load_messages(chat)] == ["Hi"]
    assert not manager.stop(run.id)  # over


def test_a_stop_written_by_another_process_reaches_the_run(storage: SqliteStorage, tmp_path: Path) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    wait_until(lambda: job.started == [run.id])
    other_process = SqliteStorage(tmp_path / "data")  # its own connection, as another server would have
    assert other_process.run_store().request_stop(run.id)
    other_process.close()
    wait_until(lambda: manager.get(run.id).state == "stopped")  # type: ignore[union-attr]


def test_leases_are_renewed_while_a_run_goes(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, lease_ms=300, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    time.sleep(0.8)  # well past the first lease
    assert manager.active_run(chat) is not None
    job.release.set()
    wait_until(lambda: manager.get(run.id).state == "answered")  # type: ignore[union-attr]


def test_runs_past_the_executor_bound_wait_queued(storage: SqliteStorage) -> None:
    first_chat, second_chat = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, max_workers=1, heartbeat_seconds=0.05)
    first = manager.start(first_chat, None)
    second = manager.start(second_chat, None)
    wait_until(lambda: job.started == [first.id])
    time.sleep(0.1)
    assert manager.get(second.id).state == "queued"  # type: ignore[union-attr]
    job.release.set()
    wait_until(lambda: manager.get(second.id).state == "answered")  # type: ignore[union-attr]
    assert job.started == [first.id, second.id]


def test_a_run_stopped_while_queued_never_starts(storage: SqliteStorage) -> None:
    first_chat, second_chat = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, max_workers=1, heartbeat_seconds=0.05)
    first = manager.start(first_chat, None)
    second = manager.start(second_chat, None)
    manager.stop(second.id)
    job.release.set()
    wait_until(lambda: manager.get(second.id).state == "stopped")  # type: ignore[union-attr]
    assert job.started == [first.id]


def test_a_job_that_raises_ends_its_run_in_error(storage: SqliteStorage) -> None:
    chat = conversation(storage)

    def broken(run: Run, control: RunControl) -> RunEnd:
        raise KeyError("secret detail")

    manager = ThreadRunManager(storage, broken, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    wait_until(lambda: manager.get(run.id).state == "error")  # type: ignore[union-attr]
    assert manager.get(run.id).error == "Internal error: KeyError"  # type: ignore[union-attr]
    manager.start(chat, None)  # the conversation is free again


def test_start_answers_the_calls_an_interrupted_run_left_open_before_the_new_question(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    storage.append_message(chat, ChatMessage(role="user", content="Transcribe"))
    storage.append_message(chat, ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="transcribe_video")]))
    job = GatedJob()
    job.release.set()
    ThreadRunManager(storage, job).start(chat, None, ChatMessage(role="user", content="Again?"))
    stored = storage.load_messages(chat)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "user"]
    assert stored[2].tool_result is not None and stored[2].tool_result.error == INTERRUPTED_ERROR
