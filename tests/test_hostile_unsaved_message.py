"""Issue 9 item 1: a message that could not be saved is saved, in order, before anything after it.

A LATER message of an existing conversation meets a real fault: the database busy past its timeout (a
second connection holds the write lock), the disk full (a small tmpfs the test mounts and fills) or the
data folder read-only (that tmpfs remounted read-only). The page says so and offers Retry; once the cause
is gone, Retry writes the question first, then asks the model, on both providers. The database order,
what the model receives and what a reopened conversation shows are checked.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.storage import SqliteStorage
from fake_llm import FakeLLMServer, Reply, gemini_text, openai_text
from tests.hostile_support import close_connections_to, fill, requires_root, set_read_only, tmpfs
from tests.page_support import bubbles, click, configure_env, new_page, send, texts

TURNS = [("user", "First question"), ("assistant", "First answer.")]
QUESTION = "Second question, please keep me"
ANSWER = "Second answer."


def _answer(fake: FakeLLMServer, provider: str, text: str) -> None:
    if provider == "gemini":
        fake.gemini.push(gemini_text(text))
    else:
        fake.chat.push(openai_text(text))


def _sent(fake: FakeLLMServer, provider: str) -> list[tuple[str, str]]:
    """The history the model received last, as ``(role, text)`` in our role names."""
    if provider == "gemini":
        contents = fake.gemini.last.json["contents"]
        return [
            ("assistant" if c["role"] == "model" else c["role"], "".join(p.get("text", "") for p in c["parts"]))
            for c in contents
        ]
    return [(m["role"], m["content"]) for m in fake.chat.last.json["messages"][1:]]


def _requests(fake: FakeLLMServer, provider: str) -> int:
    return len((fake.gemini if provider == "gemini" else fake.chat).requests)


@contextlib.contextmanager
def _fault(cause: str, base: Path) -> Iterator[None]:
    """The fault, on for the block and gone after it; ``base`` holds the data directory (for a full or
    read-only disk it is the mount point of a small tmpfs)."""
    data_dir = base / "data"
    if cause == "busy":
        blocker = sqlite3.connect(data_dir / "agent.sqlite3", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database past the busy timeout
        try:
            yield
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
    elif cause == "full":
        checkpoint = sqlite3.connect(data_dir / "agent.sqlite3", isolation_level=None)
        checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the next write must grow the WAL file
        checkpoint.close()
        filler = fill(base)
        try:
            yield
        finally:
            filler.unlink()
    else:
        close_connections_to(data_dir)
        set_read_only(base, True)
        try:
            yield
        finally:
            set_read_only(base, False)


def _stored(data_dir: Path, conversation_id: str) -> list[tuple[str, str]]:
    storage = SqliteStorage(data_dir)
    try:
        return [(m.role, m.content) for m in storage.load_messages(conversation_id)]
    finally:
        storage.close()


def _check_fault_then_retry(
    cause: str, provider: str, fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, base: Path
) -> None:
    data_dir = base / "data"
    configure_env(monkeypatch, data_dir, fake)
    monkeypatch.setenv("AGENT_DB_BUSY_TIMEOUT_MS", "200")
    if provider == "gemini":
        monkeypatch.setenv("LLM_PROVIDER", "gemini")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.gemini_base_url)
    _answer(fake, provider, TURNS[1][1])
    at = send(new_page(), TURNS[0][1])
    conversation_id = at.query_params["chat"]
    assert bubbles(at) == TURNS

    with _fault(cause, base):
        send(at, QUESTION)
        [error] = texts(at.main.error)
        assert "could not be saved" in error, error
        assert str(base) not in error and "Traceback" not in error
        assert bubbles(at) == [*TURNS, ("user", QUESTION)]  # kept on screen for Retry
        assert _requests(fake, provider) == 1  # the model was not asked with an unsaved question

    _answer(fake, provider, ANSWER)
    click(at, "chat_retry")  # starts the run on the server; click() waits for it like the page's refresh
    assert not at.main.error
    expected = [*TURNS, ("user", QUESTION), ("assistant", ANSWER)]
    assert bubbles(at) == expected
    assert _sent(fake, provider) == [*TURNS, ("user", QUESTION)]
    assert _stored(data_dir, conversation_id) == expected  # the question is stored, before the answer
    reopened = new_page({"chat": conversation_id})
    assert bubbles(reopened) == expected


PROVIDERS = ["openai-compatible", "gemini"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_message_unsaved_while_the_database_is_busy_is_saved_in_order_on_retry(
    provider: str, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _check_fault_then_retry("busy", provider, fake_llm, monkeypatch, tmp_path)


@requires_root
@pytest.mark.parametrize("cause", ["full", "read-only"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_message_unsaved_on_a_full_or_read_only_disk_is_saved_in_order_on_retry(
    cause: str, provider: str, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", 4096) as mount:
        _check_fault_then_retry(cause, provider, fake_llm, monkeypatch, mount)


def test_an_answer_unsaved_while_busy_is_saved_on_retry_without_asking_the_model_again(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model answered but its answer could not be written (another writer took the database while the
    model was thinking): Retry saves that answer, and asks nothing again (two answers in a row otherwise)."""
    data_dir = tmp_path / "data"
    configure_env(monkeypatch, data_dir, fake_llm)
    monkeypatch.setenv("AGENT_DB_BUSY_TIMEOUT_MS", "200")
    at = new_page()
    blocker = sqlite3.connect(data_dir / "agent.sqlite3", isolation_level=None, check_same_thread=False)

    def answer_while_locking(_request: object) -> Reply:
        blocker.execute("BEGIN IMMEDIATE")
        return openai_text("An answer worth keeping.")

    fake_llm.chat.push(answer_while_locking)
    try:
        send(at, "A question")
        assert at.main.error  # the run failed saving the answer, and says so
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    click(at, "chat_retry")  # starts the run on the server; click() waits for it like the page's refresh
    assert not at.main.error
    expected = [("user", "A question"), ("assistant", "An answer worth keeping.")]
    assert bubbles(at) == expected
    assert _stored(data_dir, at.query_params["chat"]) == expected
    assert len(fake_llm.chat.requests) == 1
