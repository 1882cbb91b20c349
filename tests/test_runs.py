"""Runs in storage and the thread run manager, on both backends (ids ``sqlite`` and ``postgres``): one active
run per conversation enforced by the database, leases that tell a dead run from a live one, Stop through
storage, the bounded executor."""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.errors import ErrorKind
from agent_app.runs.events import (
    EndEvent,
    MessageEvent,
    StatusEvent,
    TextEvent,
    ToolProgressEvent,
    UsageEvent,
)
from agent_app.runs.manager import RunControl, RunEnd, RunJob, ThreadRunManager
from agent_app.runs.models import Run, RunBusyError
from agent_app.runs.recovery import INTERRUPTED_ERROR, is_unanswered
from agent_app.runs.turn import Assistant, run_turn
from agent_app.runs.view import RunView
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, ToolCall, now_ms
from tests.run_support import wait_until
from tests.storage_backends import BACKENDS, Backend, backend_for, insert_raw

WAIT = 10.0


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def conversation(storage: SqliteStorage) -> str:
    return storage.create_conversation(storage.create_project("p").id).id


class GatedJob:
    """A job that records an event, then waits until released or stopped."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[str] = []
        self.ended: list[str] = []

    def __call__(self, run: Run, control: RunControl) -> RunEnd:
        self.started.append(run.id)
        control.emit(StatusEvent(status="sending"))
        while not self.release.wait(0.01):
            if control.cancellation.is_set():
                self.ended.append("stopped")
                return RunEnd("stopped")
        self.ended.append("answered")
        return RunEnd("answered")


def in_turn(*jobs: RunJob) -> RunJob:
    """A job doing each of ``jobs`` in turn, one per run."""
    pending = iter(jobs)

    def job(run: Run, control: RunControl) -> RunEnd:
        return next(pending)(run, control)

    return job


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


def test_a_run_is_never_seen_ended_without_its_end_event(storage: SqliteStorage) -> None:
    """How a run ended is written with its end: a reader that sees it ended also reads the end event (a CI run
    read an answered run with no events, between the two writes this was before)."""
    chat = conversation(storage)
    runs = storage.run_store()
    question = [ChatMessage(role="user", content="one")]
    run = runs.create_run(chat, None, question, owner="a", lease_until=now_ms() + 60_000)
    runs.append_event(run.id, TextEvent(delta="Hi"))
    assert runs.finish_run(run.id, "error", "It broke", ErrorKind.PROVIDER_FAILED, owner="a")
    end = EndEvent(state="error", error="It broke", error_kind=ErrorKind.PROVIDER_FAILED)
    assert [e.data for e in runs.events(run.id)] == [TextEvent(delta="Hi"), end]
    assert not runs.finish_run(run.id, "answered")  # over already: no second end
    assert [e.data for e in runs.events(run.id)] == [TextEvent(delta="Hi"), end]
    seen_ended: dict[str, bool] = {}  # run id: whether its events held the end

    def read_until_ended(run_id: str) -> None:
        """The run's state first, then its events: the order a page reads them in."""
        reader = storage.run_store()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            read = reader.get_run(run_id)
            if read is not None and not read.active:
                seen_ended[run_id] = any(isinstance(event.data, EndEvent) for event in reader.events(run_id))
                return

    for _ in range(30):
        run = runs.create_run(chat, None, [], owner="a", lease_until=now_ms() + 60_000)
        reader = threading.Thread(target=read_until_ended, args=(run.id,))
        reader.start()
        assert runs.finish_run(run.id, "answered", owner="a")
        reader.join(timeout=15)
    assert len(seen_ended) == 30 and all(seen_ended.values()), seen_ended


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
    assert [runs.append_event(run.id, TextEvent(delta=d)) for d in ("Hel", "lo", " ✓")] == [1, 2, 3]
    assert [e.data for e in runs.events(run.id)] == [TextEvent(delta=d) for d in ("Hel", "lo", " ✓")]
    assert [e.seq for e in runs.events(run.id, after_seq=2)] == [3]


def test_events_the_first_release_wrote_read_as_typed_events(storage: SqliteStorage, backend: Backend) -> None:
    """Rows in the shapes the first release stored (kind, camelCase JSON), written into the database directly, read
    as the typed events and fold into the same live view; a kind this release does not know is skipped."""
    chat = conversation(storage)
    run = storage.run_store().create_run(chat, None, [], owner="a", lease_until=now_ms() + 60_000)
    rows = [
        ("status", {"status": "processing", "activeTool": "transcribe_video"}),
        ("message", {"id": "m1", "role": "assistant"}),
        ("tool_progress", {"toolCallId": "c1", "name": "transcribe_video", "fraction": 0.5, "message": "Half"}),
        ("text", {"delta": "So far"}),
        ("usage", {"inputTokens": 12, "outputTokens": 3}),
        ("message", {"id": "m2", "role": "tool", "toolCallId": "c1"}),
        ("a_later_kind", {"anything": 1}),
        ("end", {"state": "error", "error": "The model failed", "errorKind": "rate_limited"}),
    ]
    insert_raw(
        backend,
        "INSERT INTO run_events (run_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)",
        [(run.id, seq, kind, json.dumps(data), 1) for seq, (kind, data) in enumerate(rows, start=1)],
    )
    events = storage.run_store().events(run.id)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6, 8]
    assert [e.data for e in events] == [
        StatusEvent(status="processing", active_tool="transcribe_video"),
        MessageEvent(id="m1", role="assistant"),
        ToolProgressEvent(tool_call_id="c1", name="transcribe_video", fraction=0.5, message="Half"),
        TextEvent(delta="So far"),
        UsageEvent(input_tokens=12, output_tokens=3),
        MessageEvent(id="m2", role="tool", tool_call_id="c1"),
        EndEvent(state="error", error="The model failed", error_kind=ErrorKind.RATE_LIMITED),
    ]
    view = RunView(run_id=run.id).apply(events[:4])
    assert (view.status, view.active_tool, view.text, list(view.progress)) == (
        "processing",
        "transcribe_video",
        "So far",
        ["c1"],
    )
    view.apply(events[4:])
    assert (view.input_tokens, view.progress, view.ended) == (12, {}, "error")
    # What this release writes is the same shape: the stored JSON of each event, without its kind.
    stored = [json.loads(e.data.stored_json()) for e in events]
    assert stored == [data for kind, data in rows if kind != "a_later_kind"]


def test_manager_starts_at_once_and_stop_ends_the_run(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    run = manager.start(chat, None, ChatMessage(role="user", content="Hi"))  # returns while the job waits
    wait_until(lambda: job.started == [run.id], WAIT)
    assert manager.active_run(chat) is not None and manager.active_run(chat).state == "running"  # type: ignore[union-attr]
    with pytest.raises(RunBusyError):
        manager.start(chat, None, ChatMessage(role="user", content="meanwhile"))
    assert manager.stop(run.id)
    wait_until(lambda: manager.active_run(chat) is None, WAIT)
    wait_until(lambda: manager.events(run.id)[-1].kind == "end", WAIT)  # written just after the run's state
    ended = manager.get(run.id)
    assert ended is not None and ended.state == "stopped" and ended.stop_requested
    assert [e.data for e in manager.events(run.id)] == [StatusEvent(status="sending"), EndEvent(state="stopped")]
    assert [m.content for m in storage.load_messages(chat)] == ["Hi"]
    assert not manager.stop(run.id)  # over


def test_a_stop_written_by_another_process_reaches_the_run(storage: SqliteStorage, backend: Backend) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    wait_until(lambda: job.started == [run.id], WAIT)
    other_process = backend.open()  # its own connection, as another server would have
    assert other_process.run_store().request_stop(run.id)
    other_process.close()
    wait_until(lambda: manager.get(run.id).state == "stopped", WAIT)  # type: ignore[union-attr]


def test_deleting_a_conversation_stops_its_run_and_nothing_of_it_stays(storage: SqliteStorage) -> None:
    chat, other = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=60)  # no beat: the delete itself stops the run
    run = manager.start(chat, None, ChatMessage(role="user", content="Hi"))
    wait_until(lambda: job.started == [run.id], WAIT)
    manager.delete_conversation(chat)
    wait_until(lambda: job.ended == ["stopped"], WAIT)
    assert manager.get(run.id) is None and manager.active_run(chat) is None
    assert storage.get_conversation(chat) is None and storage.load_messages(chat) == []
    assert storage.get_conversation(other) is not None


def test_a_conversation_deleted_by_another_process_stops_the_run_at_the_next_beat(
    storage: SqliteStorage, backend: Backend
) -> None:
    chat, busy = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    deleted, kept = manager.start(chat, None), manager.start(busy, None)
    wait_until(lambda: sorted(job.started) == sorted([deleted.id, kept.id]), WAIT)
    other_process = backend.open()  # its own connection, as another server would have
    other_process.delete_conversation(chat)
    other_process.close()
    wait_until(lambda: job.ended == ["stopped"], WAIT)
    assert manager.active_run(busy) is not None  # the other conversation's run goes on
    manager.stop(kept.id)
    wait_until(lambda: job.ended == ["stopped", "stopped"], WAIT)


def test_leases_are_renewed_while_a_run_goes(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, lease_ms=300, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    time.sleep(0.8)  # well past the first lease
    assert manager.active_run(chat) is not None
    job.release.set()
    wait_until(lambda: manager.get(run.id).state == "answered", WAIT)  # type: ignore[union-attr]


def test_runs_past_the_executor_bound_wait_queued(storage: SqliteStorage) -> None:
    first_chat, second_chat = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, max_workers=1, heartbeat_seconds=0.05)
    first = manager.start(first_chat, None)
    second = manager.start(second_chat, None)
    wait_until(lambda: job.started == [first.id], WAIT)
    time.sleep(0.1)
    assert manager.get(second.id).state == "queued"  # type: ignore[union-attr]
    job.release.set()
    wait_until(lambda: manager.get(second.id).state == "answered", WAIT)  # type: ignore[union-attr]
    assert job.started == [first.id, second.id]


def test_a_run_stopped_while_queued_never_starts(storage: SqliteStorage) -> None:
    first_chat, second_chat = conversation(storage), conversation(storage)
    job = GatedJob()
    manager = ThreadRunManager(storage, job, max_workers=1, heartbeat_seconds=0.05)
    first = manager.start(first_chat, None)
    second = manager.start(second_chat, None)
    manager.stop(second.id)
    job.release.set()
    wait_until(lambda: manager.get(second.id).state == "stopped", WAIT)  # type: ignore[union-attr]
    assert job.started == [first.id]


def test_a_job_that_raises_ends_its_run_in_error(storage: SqliteStorage) -> None:
    chat = conversation(storage)

    def broken(run: Run, control: RunControl) -> RunEnd:
        raise KeyError("secret detail")

    manager = ThreadRunManager(storage, broken, heartbeat_seconds=0.05)
    run = manager.start(chat, None)
    wait_until(lambda: manager.get(run.id).state == "error", WAIT)  # type: ignore[union-attr]
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


def test_an_answer_the_run_could_not_store_is_written_first_by_retry_and_the_model_is_not_asked_again(
    storage: SqliteStorage,
) -> None:
    """The model answered but the database refused the answer: the run ends in error with the answer kept in
    this process; Retry writes it before anything else, and the retried run answers without a model call."""
    chat = conversation(storage)
    answer = ChatMessage(role="assistant", content="An answer worth keeping.")

    def refused_answer(run: Run, control: RunControl) -> RunEnd:
        return RunEnd("error", "Could not save the answer: the database is busy", unsaved=(answer,))

    def never_ask() -> Assistant:
        raise AssertionError("the model was asked again")

    manager = ThreadRunManager(
        storage, in_turn(refused_answer, functools.partial(run_turn, storage, never_ask)), heartbeat_seconds=0.05
    )
    first = manager.start(chat, None, ChatMessage(role="user", content="A question"))
    wait_until(lambda: not manager.get(first.id).active, WAIT)  # type: ignore[union-attr]
    ended = manager.latest_run(chat)
    assert ended is not None and ended.state == "error" and ended.error is not None and "busy" in ended.error
    stored = storage.load_messages(chat)
    assert [m.content for m in stored] == ["A question"] and is_unanswered(stored)  # the page offers Retry

    retry = manager.start(chat, None)
    assert [m.id for m in storage.load_messages(chat)][1:] == [answer.id]  # written by the start, before the job
    wait_until(lambda: not manager.get(retry.id).active, WAIT)  # type: ignore[union-attr]
    assert manager.get(retry.id).state == "answered"  # type: ignore[union-attr]
    assert [e.data for e in manager.events(retry.id)] == [EndEvent(state="answered")]
    stored = storage.load_messages(chat)
    assert [(m.role, m.content) for m in stored] == [("user", "A question"), ("assistant", "An answer worth keeping.")]
    assert not is_unanswered(stored)


def _cut_run(storage: SqliteStorage, chat: str, answer: ChatMessage | None) -> Run:
    """What a server killed mid-run leaves: a running run with streamed text, maybe its stored answer, no
    end record, and a lease nobody renews."""
    runs = storage.run_store()
    run = runs.create_run(
        chat, None, [ChatMessage(role="user", content="A question")], owner="killed", lease_until=now_ms() + 60_000
    )
    assert runs.mark_running(run.id)
    runs.append_event(run.id, StatusEvent(status="responding"))
    runs.append_event(run.id, TextEvent(delta="The whole "))
    if answer is not None:
        runs.append_event(run.id, TextEvent(delta="answer."))
        storage.append_message(chat, answer)
        runs.append_event(run.id, MessageEvent(id=answer.id, role="assistant"))
    runs.renew_leases("killed", now_ms() - 1)  # the process is gone: its lease has run out
    return run


@pytest.mark.parametrize(("stopped", "state"), [(None, "answered"), (True, "stopped")])
def test_a_run_killed_after_storing_its_answer_but_before_its_end_reads_as_answered(
    storage: SqliteStorage, stopped: bool | None, state: str
) -> None:
    chat = conversation(storage)
    answer = ChatMessage(role="assistant", content="The whole answer.", stopped=stopped)
    run = _cut_run(storage, chat, answer)
    restarted = ThreadRunManager(storage, GatedJob(), heartbeat_seconds=0.05)  # the server, started again
    assert restarted.active_run(chat) is None
    assert storage.run_store().get_run(run.id).state == "interrupted"  # type: ignore[union-attr]
    latest = restarted.latest_run(chat)
    assert latest is not None and latest.id == run.id and latest.state == state and latest.error is None
    view = RunView(run_id=run.id).apply(restarted.events(run.id))
    assert view.text == "" and view.ended is None  # the stored answer replaced the streamed text
    stored = storage.load_messages(chat)
    assert [m.content for m in stored] == ["A question", "The whole answer."] and not is_unanswered(stored)

    job = GatedJob()
    job.release.set()
    next_run = ThreadRunManager(storage, job, heartbeat_seconds=0.05).start(
        chat, None, ChatMessage(role="user", content="Next")
    )
    wait_until(lambda: storage.run_store().get_run(next_run.id).state == "answered", WAIT)  # type: ignore[union-attr]
    assert [m.content for m in storage.load_messages(chat)] == ["A question", "The whole answer.", "Next"]


def test_a_run_killed_while_streaming_reads_as_interrupted_with_its_text_in_the_events(storage: SqliteStorage) -> None:
    chat = conversation(storage)
    run = _cut_run(storage, chat, answer=None)
    restarted = ThreadRunManager(storage, GatedJob(), heartbeat_seconds=0.05)
    latest = restarted.latest_run(chat)
    assert latest is not None and latest.state == "interrupted"
    assert is_unanswered(storage.load_messages(chat))  # the page says so and offers Retry
    assert RunView(run_id=run.id).apply(restarted.events(run.id)).text == "The whole "


def test_an_end_the_database_refused_reads_as_ended_here_and_is_recorded_by_the_next_start(tmp_path: Path) -> None:
    """Storage busy when the run ends: this process's readers see the end at once (the conversation is free),
    the database still says running; the conversation's next start records the end before anything else."""
    storage = SqliteStorage(tmp_path / "data", busy_timeout_ms=100)
    chat = conversation(storage)
    blocker = sqlite3.connect(tmp_path / "data" / "agent.sqlite3", isolation_level=None, check_same_thread=False)

    def answered_while_locked(run: Run, control: RunControl) -> RunEnd:
        storage.append_message(chat, ChatMessage(role="assistant", content="Answer."))
        blocker.execute("BEGIN IMMEDIATE")  # another writer takes the database as the run ends
        return RunEnd("answered")

    # No beat during the test (the heartbeat would record the end too, once the lock goes: test_run_fencing).
    manager = ThreadRunManager(storage, in_turn(answered_while_locked, GatedJob()), heartbeat_seconds=60)
    try:
        run = manager.start(chat, None, ChatMessage(role="user", content="A question"))
        wait_until(lambda: manager.get(run.id).state == "answered", WAIT)  # type: ignore[union-attr]
        assert manager.active_run(chat) is None and manager.latest_run(chat).state == "answered"  # type: ignore[union-attr]
        assert storage.run_store().get_run(run.id).state == "running"  # type: ignore[union-attr]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [e.kind for e in manager.events(run.id)] == []  # nothing recorded yet
    second = manager.start(chat, None, ChatMessage(role="user", content="Next"))
    recorded = storage.run_store().get_run(run.id)
    assert recorded is not None and recorded.state == "answered"
    assert [e.data for e in manager.events(run.id)] == [EndEvent(state="answered")]
    active = manager.active_run(chat)  # the second run (queued or, by now, running)
    assert active is not None and active.id == second.id
    manager.stop(second.id)
    storage.close()
