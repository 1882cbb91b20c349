"""The session's Workspace over a plain dict and a real SqliteStorage: what a URL opens, lazy
conversations, and the context the assistant gets."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from agent_app.ui.session_workspace import DEFAULT_PROJECT_NAME, Workspace
from tests.media_samples import make_wav


def test_first_session_gets_a_default_project_and_no_stored_chat(storage: SqliteStorage) -> None:
    workspace = Workspace({}, storage)
    assert workspace.project().name == DEFAULT_PROJECT_NAME
    assert workspace.conversation_id is None
    assert storage.list_conversations(workspace.project().id) == []  # nothing stored until something is said


def test_url_opens_a_conversation_of_another_project(storage: SqliteStorage) -> None:
    first, second = storage.create_project("one"), storage.create_project("two")
    chat = storage.create_conversation(second.id)
    storage.append_message(chat.id, ChatMessage(role="user", content="hi"))
    state: dict[str, Any] = {}
    workspace = Workspace(state, storage)
    workspace.open_project(first.id)
    workspace.sync_with_url(None, chat.id)
    assert workspace.project_id == second.id
    assert workspace.conversation_id == chat.id
    assert [m.content for m in workspace.chat.messages] == ["hi"]


def test_url_with_mismatched_project_and_chat_opens_the_project_only(storage: SqliteStorage) -> None:
    first, second = storage.create_project("one"), storage.create_project("two")
    chat = storage.create_conversation(first.id)
    workspace = Workspace({}, storage)
    assert not workspace.sync_with_url(second.id, chat.id)  # "not found": that chat is not in that project
    assert workspace.project_id == second.id
    assert workspace.conversation_id is None


def test_conversation_is_created_on_first_use_with_what_was_said(storage: SqliteStorage) -> None:
    workspace = Workspace({}, storage)
    workspace.chat.add_message(ChatMessage(role="user", content="What is in the intro?"))
    conversation_id = workspace.ensure_conversation("What is in the intro?")
    assert [m.content for m in storage.load_messages(conversation_id)] == ["What is in the intro?"]
    stored = storage.get_conversation(conversation_id)
    assert stored is not None and stored.title == "What is in the intro?"
    workspace.chat.add_message(ChatMessage(role="assistant", content="Waves."))
    assert storage.count_messages(conversation_id) == 2  # written through from now on


def test_a_vanished_conversation_starts_over_instead_of_failing(storage: SqliteStorage) -> None:
    state: dict[str, Any] = {}
    workspace = Workspace(state, storage)
    workspace.chat.add_message(ChatMessage(role="user", content="hi"))
    conversation_id = workspace.ensure_conversation("hi")
    with sqlite3.connect(storage.data_dir / "agent.sqlite3") as db:
        db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
    again = Workspace(state, storage)  # the next run of the same session
    assert again.conversation_id is None
    assert again.chat.messages == []


def test_context_lists_assets_scene_playhead_and_active_asset(storage: SqliteStorage, tmp_path: Path) -> None:
    workspace = Workspace({}, storage)
    project = workspace.project()
    scene = storage.create_scene(project.id, "Intro")
    wav = make_wav(tmp_path / "a.wav", seconds=1.0).read_bytes()
    first = storage.import_asset(project.id, "a.wav", io.BytesIO(wav))
    second = storage.import_asset(project.id, "b.wav", io.BytesIO(wav))
    workspace.select_scene(scene.id)
    workspace.select_asset(second.id)
    workspace.set_playhead(1500)
    context = workspace.context()
    assert context.project_id == project.id
    assert context.active_scene_id == scene.id and context.active_scene_name == "Intro"
    assert [a.id for a in context.media_assets] == [second.id, first.id]  # newest first
    assert context.active_asset_id == second.id
    assert context.playback_time_ms == 1500
    storage.remove_asset(second.id)
    assert workspace.context().active_asset_id == first.id  # falls back to an asset that exists
