"""The page on the shared database: with ``AGENT_DATABASE_URL`` set, the real page script, route handler and
OpenAI SDK (against the fake LLM server) keep projects, conversations and runs in PostgreSQL, the media
under ``AGENT_DATA_DIR``, and no SQLite file is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_app.storage import PostgresStorage
from fake_llm import FakeLLMServer, delayed, openai_text
from tests.page_support import bubbles, configure_env, new_page, run_going, send, settle, texts
from testsupport.streamlit_server import free_port


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer, postgres_url: str) -> Path:
    directory = tmp_path / "data"
    configure_env(monkeypatch, directory, fake_llm)
    monkeypatch.setenv("AGENT_DATABASE_URL", postgres_url)
    return directory


def stored_messages(data_dir: Path, url: str, conversation_id: str) -> list[tuple[str, str]]:
    storage = PostgresStorage(data_dir, url)
    try:
        return [(m.role, m.content) for m in storage.load_messages(conversation_id)]
    finally:
        storage.close_pool()


def test_a_question_is_answered_and_kept_in_postgresql(
    data_dir: Path, fake_llm: FakeLLMServer, postgres_url: str
) -> None:
    fake_llm.chat.push(openai_text("Stored in the shared database."))
    at = send(new_page(), "Where does this go?")
    assert bubbles(at) == [("user", "Where does this go?"), ("assistant", "Stored in the shared database.")]
    chat_id = at.query_params["chat"]
    assert stored_messages(data_dir, postgres_url, chat_id) == [
        ("user", "Where does this go?"),
        ("assistant", "Stored in the shared database."),
    ]
    assert not (data_dir / "agent.sqlite3").exists()
    reloaded = new_page(dict(at.query_params))  # another browser session, as after a restart
    assert [text for _, text in bubbles(reloaded)] == ["Where does this go?", "Stored in the shared database."]


def test_a_question_sent_while_another_tab_runs_is_refused_by_the_database(
    data_dir: Path, fake_llm: FakeLLMServer, postgres_url: str
) -> None:
    fake_llm.chat.push(openai_text("Opening answer."))
    tab_a = send(new_page(), "Opening")
    tab_b = new_page(dict(tab_a.query_params))
    fake_llm.chat.push(delayed(openai_text("A's answer."), 1.0))
    tab_a.chat_input(key="chat_prompt").set_value("A asks").run()
    assert run_going(tab_a)
    tab_b.chat_input(key="chat_prompt").set_value("B asks").run()
    assert any("still answering in this conversation" in text for text in texts(tab_b.main.info))
    settle(tab_a)
    chat_id = tab_a.query_params["chat"]
    assert stored_messages(data_dir, postgres_url, chat_id)[2:] == [("user", "A asks"), ("assistant", "A's answer.")]


def test_a_database_that_cannot_be_reached_is_named_on_the_page_without_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_env(monkeypatch, tmp_path / "data", None)
    monkeypatch.setenv("AGENT_DATABASE_URL", f"postgresql://agent:pw-never-shown@127.0.0.1:{free_port()}/agent")
    at = new_page()
    [error] = texts(at.main.error)
    assert "The database cannot be used (setting AGENT_DATABASE_URL)" in error
    assert "the database server cannot be reached" in error
    assert "pw-never-shown" not in error and "127.0.0.1" not in error
