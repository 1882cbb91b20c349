"""Replacing the last turn (Edit, Regenerate) is part of the transaction that starts its run: refused with
nothing deleted or renamed while another run of the conversation is live, or when another tab changed the
turn first; otherwise the old branch goes, the title follows an edited question, and the run starts. On both
backends (ids ``sqlite`` and ``postgres``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.runs.manager import ThreadRunManager
from agent_app.runs.models import RunBusyError, TurnChangedError
from agent_app.storage import Storage, StorageError
from agent_app.types import ChatMessage, now_ms
from tests.run_support import wait_until
from tests.storage_backends import BACKENDS, Backend, another_writer_holding_the_lock, backend_for, raw_rows
from tests.test_runs import GatedJob

LIVE = 60_000


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def conversation_with(storage: Storage, *turns: tuple[str, str]) -> tuple[str, list[ChatMessage]]:
    chat = storage.create_conversation(storage.create_project("p").id).id
    messages = [ChatMessage(role=role, content=text) for role, text in turns]
    for message in messages:
        storage.append_message(chat, message)
    return chat, messages


def contents(storage: Storage, chat: str) -> list[str]:
    return [m.content for m in storage.load_messages(chat)]


def title(storage: Storage, chat: str) -> str:
    conversation = storage.get_conversation(chat)
    assert conversation is not None
    return conversation.title


TURNS = (("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2"))


def test_a_live_run_refuses_a_replacement_before_anything_is_deleted_or_renamed(storage: Storage) -> None:
    chat, messages = conversation_with(storage, ("user", "Q1"), ("assistant", "A1"))
    runs = storage.run_store()
    live = runs.create_run(chat, None, [ChatMessage(role="user", content="Q2")], owner="a", lease_until=now_ms() + LIVE)
    for replace_from, question in ((messages[1].id, None), (messages[0].id, ChatMessage(role="user", content="Q1!"))):
        with pytest.raises(RunBusyError, match="still answering"):
            runs.create_run(
                chat, None, [question] if question else [], owner="b", lease_until=now_ms() + LIVE,
                replace_from=replace_from,
            )  # fmt: skip
    assert contents(storage, chat) == ["Q1", "A1", "Q2"]
    assert title(storage, chat) == "Q1"
    assert runs.active_run(chat) == live and runs.latest_run(chat) == live


def test_regenerate_and_edit_replace_the_last_turn_and_the_title_follows_the_edit(storage: Storage) -> None:
    chat, messages = conversation_with(storage, *TURNS)
    runs = storage.run_store()
    regenerated = runs.create_run(chat, None, [], owner="a", lease_until=now_ms() + LIVE, replace_from=messages[3].id)
    assert contents(storage, chat) == ["Q1", "A1", "Q2"]
    assert runs.active_run(chat) == regenerated
    runs.finish_run(regenerated.id, "answered")

    edited = ChatMessage(role="user", content="Q2, asked better")
    runs.create_run(chat, None, [edited], owner="a", lease_until=now_ms() + LIVE, replace_from=messages[2].id)
    assert contents(storage, chat) == ["Q1", "A1", "Q2, asked better"]
    assert title(storage, chat) == "Q1"  # made from the first question, which stays


def test_a_title_made_from_the_edited_question_follows_the_edit(storage: Storage) -> None:
    chat, messages = conversation_with(storage, ("user", "Q1"), ("assistant", "A1"))
    storage.run_store().create_run(
        chat, None, [ChatMessage(role="user", content="Q1, asked better")], owner="a", lease_until=now_ms() + LIVE,
        replace_from=messages[0].id,
    )  # fmt: skip
    assert contents(storage, chat) == ["Q1, asked better"]
    assert title(storage, chat) == "Q1, asked better"


def test_a_title_the_user_chose_stays_when_the_question_is_edited(storage: Storage) -> None:
    chat, messages = conversation_with(storage, ("user", "Q1"), ("assistant", "A1"))
    storage.rename_conversation(chat, "Harbour notes")
    storage.run_store().create_run(
        chat, None, [ChatMessage(role="user", content="Q1 again")], owner="a", lease_until=now_ms() + LIVE,
        replace_from=messages[0].id,
    )  # fmt: skip
    assert title(storage, chat) == "Harbour notes"


def test_a_turn_another_tab_changed_first_is_not_replaced(storage: Storage) -> None:
    chat, messages = conversation_with(storage, *TURNS)
    runs = storage.run_store()
    for stale in (messages[1].id, messages[0].id, "no-such-message"):  # a question follows, or it is gone
        with pytest.raises(TurnChangedError, match="changed in another tab"):
            runs.create_run(
                chat, None, [ChatMessage(role="user", content="x")], owner="b", lease_until=now_ms() + LIVE,
                replace_from=stale,
            )  # fmt: skip
    assert contents(storage, chat) == ["Q1", "A1", "Q2", "A2"]
    assert title(storage, chat) == "Q1"
    assert runs.latest_run(chat) is None  # no run was created either


def test_a_replacement_waiting_on_a_held_write_lock_commits_nothing_until_it_gets_it(backend: Backend) -> None:
    """The whole replacement is one write transaction: while another connection holds the write lock it
    deletes nothing, and when it cannot get the lock nothing of it is written."""
    storage = backend.open(busy_timeout_ms=200)
    chat, messages = conversation_with(storage, *TURNS)
    with another_writer_holding_the_lock(backend):
        with pytest.raises(StorageError, match="could not be written"):
            storage.run_store().create_run(
                chat, None, [], owner="a", lease_until=now_ms() + LIVE, replace_from=messages[3].id
            )
        seen = [
            json.loads(str(row[0]))["content"] for row in raw_rows(backend, "SELECT body FROM messages ORDER BY seq")
        ]
        assert seen == ["Q1", "A1", "Q2", "A2"]
    assert contents(storage, chat) == ["Q1", "A1", "Q2", "A2"] and storage.run_store().latest_run(chat) is None


def test_a_question_and_a_regenerate_racing_from_two_tabs_never_lose_a_message(storage: Storage) -> None:
    """Each round, one tab sends a question while the other (its view from before) regenerates the answer:
    exactly one starts; when the question won, every message is still there."""
    chat, _ = conversation_with(storage, ("user", "Q1"), ("assistant", "A1"))
    manager = ThreadRunManager(storage, GatedJob(), heartbeat_seconds=0.05)
    outcomes: dict[str, str] = {}

    def send(barrier: threading.Barrier, text: str) -> None:
        barrier.wait()
        try:
            manager.start(chat, None, ChatMessage(role="user", content=text))
            outcomes["send"] = "started"
        except RunBusyError:
            outcomes["send"] = "refused"

    def regenerate(barrier: threading.Barrier, start_id: str) -> None:
        barrier.wait()
        try:
            manager.start(chat, None, replace_from=start_id)
            outcomes["regenerate"] = "started"
        except (RunBusyError, TurnChangedError):
            outcomes["regenerate"] = "refused"

    for round_number in range(20):
        history = storage.load_messages(chat)
        outcomes.clear()
        barrier = threading.Barrier(2)
        tabs = [
            threading.Thread(target=send, args=(barrier, f"next {round_number}")),
            threading.Thread(target=regenerate, args=(barrier, history[-1].id)),
        ]
        for tab in tabs:
            tab.start()
        for tab in tabs:
            tab.join(10)
        assert sorted(outcomes.values()) == ["refused", "started"], outcomes
        now = contents(storage, chat)
        if outcomes["send"] == "started":
            assert now == [m.content for m in history] + [f"next {round_number}"]
        else:
            assert now == [m.content for m in history[:-1]]
        run = manager.active_run(chat)
        assert run is not None
        storage.append_message(chat, ChatMessage(role="assistant", content=f"answer {round_number}"))
        manager.stop(run.id)
        wait_until(lambda: manager.active_run(chat) is None, 10, "the round's run did not stop")
