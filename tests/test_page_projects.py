"""Deleting a project from the sidebar: asked first, then gone with its media and conversations, its live run
stopped (the model's stream closed), and the page on the project left."""

from __future__ import annotations

import io
from pathlib import Path

from agent_app.storage import SqliteStorage
from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.streams import StreamScript
from tests.page_support import data_dir, new_page
from tests.run_support import wait_until
from tests.storage_backends import stored_path
from testsupport.media_factory import tiny_wav

__all__ = ["data_dir"]  # a fixture (tests.page_support)


def test_deleting_a_project_asks_then_deletes_its_media_and_conversations_and_stops_its_run(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    storage = SqliteStorage(data_dir)
    kept = storage.create_project("Kept")
    doomed = storage.create_project("Harbour")
    asset = storage.import_asset(doomed.id, "take.wav", io.BytesIO(tiny_wav(1)))
    media_file = stored_path(storage, asset.id)
    fake_llm.chat.push(streamed(openai_text("word " * 40), StreamScript(pieces=40, delay_seconds=0.25)))
    at = new_page({"project": doomed.id})
    at.chat_input(key="chat_prompt").set_value("Ramble on").run()
    chat_id = at.query_params["chat"]
    wait_until(lambda: fake_llm.chat.requests and fake_llm.chat.last.events_sent >= 2, 10.0)

    at.sidebar.button(key="sidebar_delete_project").click().run()
    warning = str(at.sidebar.warning[0].value)
    assert "Delete “Harbour” with its 1 media file and 1 conversation?" in warning
    at.sidebar.button(key="sidebar_delete_project_no").click().run()
    assert storage.get_project(doomed.id) is not None and not at.sidebar.warning
    at.sidebar.button(key="sidebar_delete_project").click().run()
    at.sidebar.button(key="sidebar_delete_project_yes").click().run()
    assert not at.exception, [e.value for e in at.exception]

    request = fake_llm.chat.last
    assert request.answered.wait(5) and request.closed_by_client and request.events_sent < 40
    assert storage.get_project(doomed.id) is None and storage.get_conversation(chat_id) is None
    assert storage.load_messages(chat_id) == [] and media_file is not None and not media_file.exists()
    assert [p.id for p in storage.list_projects()] == [kept.id]
    assert at.query_params["project"] == kept.id and "chat" not in at.query_params
    assert at.sidebar.selectbox(key="sidebar_project").value == kept.id
