"""The workspace page's sidebar and player with AppTest: projects, scenes, the media library, the
playhead the assistant is told about, and per-session isolation."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from agent_app.ui.chat_history import PAGE_SIZE
from agent_app.ui.formatting import escape_markdown
from fake_llm import FakeLLMServer, openai_text, transcription_reply
from tests.media_samples import make_video, make_wav
from tests.page_support import bubbles, configure_env, data_dir, new_page, send, texts
from tests.storage_backends import stored_path
from tests.transcribe_support import transcribe_on_page
from tests.transcript_page_support import click_on_page, page_words

__all__ = ["data_dir"]  # a fixture (tests.page_support)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_video(tmp_path_factory.mktemp("media") / "clip.mp4", seconds=3.0).read_bytes()


def test_first_visit_creates_a_project_and_puts_it_in_the_url(data_dir: Path) -> None:
    at = new_page()
    project_id = at.query_params["project"]
    storage = SqliteStorage(data_dir)
    assert [p.id for p in storage.list_projects()] == [project_id]
    assert at.sidebar.selectbox(key="sidebar_project").value == project_id
    assert at.main.info  # the player explains how to add media


def test_create_and_switch_projects(data_dir: Path) -> None:
    at = new_page()
    first = at.query_params["project"]
    at.sidebar.text_input(key="sidebar_new_project").input("Harbour documentary")
    at.sidebar.button(key="sidebar_create_project").click().run()
    second = at.query_params["project"]
    assert second != first
    assert "Harbour documentary" in texts(at.main.header)
    at.sidebar.selectbox(key="sidebar_project").select(first).run()
    assert at.query_params["project"] == first


def test_scenes_add_rename_and_pick(data_dir: Path) -> None:
    at = new_page()
    at.sidebar.text_input(key="sidebar_new_scene").input("Intro")
    at.sidebar.button(key="sidebar_add_scene").click().run()
    at.sidebar.text_input(key="sidebar_new_scene").input("Harbour")
    at.sidebar.button(key="sidebar_add_scene").click().run()
    scenes = at.sidebar.radio(key="sidebar_scene")
    assert scenes.options == ["Intro", "Harbour"]
    stored = SqliteStorage(data_dir).list_scenes(at.query_params["project"])
    intro_id, harbour_id = (scene.id for scene in stored)
    assert scenes.value == harbour_id  # a new scene becomes the active one
    at.sidebar.text_input(key="sidebar_rename_scene").input("Old harbour")
    at.sidebar.button(key="sidebar_rename_scene_button").click().run()
    assert at.sidebar.radio(key="sidebar_scene").options == ["Intro", "Old harbour"]
    assert at.sidebar.text_input(key="sidebar_rename_scene").value == ""
    at.sidebar.radio(key="sidebar_scene").set_value(intro_id).run()
    assert at.session_state["ws.scene_id"] == intro_id
    assert [s.name for s in SqliteStorage(data_dir).list_scenes(at.query_params["project"])] == ["Intro", "Old harbour"]


def test_upload_lists_asset_and_remove_deletes_it(data_dir: Path, clip: bytes, tmp_path: Path) -> None:
    at = new_page()
    wav = make_wav(tmp_path / "voice.wav", seconds=1.0).read_bytes()
    at.sidebar.file_uploader[0].set_value([("clip.mp4", clip, "video/mp4"), ("voice.wav", wav, "audio/wav")]).run()
    assert not at.exception
    listed = "\n".join(texts(at.sidebar.markdown))
    assert "clip.mp4" in listed and "voice.wav" in listed
    captions = texts(at.sidebar.caption)
    assert any(c.startswith("0:03 · ") for c in captions) and any(c.startswith("0:01 · ") for c in captions)
    assert len(texts(at.sidebar.success)) == 2
    assert at.main.get("audio")  # the last upload is in the player
    storage = SqliteStorage(data_dir)
    assets = storage.list_assets(at.query_params["project"])
    at.sidebar.button(key=f"sidebar_remove_{assets[0].id}").click().run()
    assert "Remove “clip.mp4” from the project?" in texts(at.sidebar.warning)[0]  # asked first: nothing deleted
    at.sidebar.button(key=f"sidebar_remove_no_{assets[0].id}").click().run()
    assert not at.sidebar.warning and len(storage.list_assets(at.query_params["project"])) == 2
    at.sidebar.button(key=f"sidebar_remove_{assets[0].id}").click().run()
    confirm = at.sidebar.button(key=f"sidebar_remove_yes_{assets[0].id}")
    assert confirm.label == "Yes, remove"  # not a second "Remove" beside the row's own button
    confirm.click().run()
    assert [a.name for a in storage.list_assets(at.query_params["project"])] == ["voice.wav"]
    assert stored_path(storage, assets[0].id) is None
    assert "clip.mp4" not in "\n".join(texts(at.sidebar.markdown))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("notes.mp4", b"plain text, not a video", "is not a readable audio or video file"),
        ("big.mp4", b"\0" * (1024 * 1024 + 10), "is too large"),
    ],
)
def test_bad_upload_is_refused_with_a_clear_message(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str, content: bytes, message: str
) -> None:
    monkeypatch.setenv("AGENT_MAX_UPLOAD_MB", "1")
    at = new_page()
    at.sidebar.file_uploader[0].upload(name, content, "video/mp4").run()
    assert not at.exception
    errors = texts(at.sidebar.error)
    assert len(errors) == 1 and message in errors[0] and name in errors[0]
    assert SqliteStorage(data_dir).list_assets(at.query_params["project"]) == []
    assert list((data_dir / "media").iterdir()) == []


def test_playhead_and_scene_reach_the_context(data_dir: Path, fake_llm: FakeLLMServer, clip: bytes) -> None:
    at = new_page()
    at.sidebar.text_input(key="sidebar_new_scene").input("Opening")
    at.sidebar.button(key="sidebar_add_scene").click().run()
    at.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    at.number_input(key="player_playhead_s").set_value(2.5).run()
    assert at.main.get("video")[0].proto.start_time == 2
    fake_llm.chat.push(openai_text("At 2.5 s."))
    send(at, "Where am I?")
    prompt = fake_llm.chat.last.json["messages"][0]["content"]
    assert "(2500 ms)" in prompt
    assert f'Active scene: "Opening" (id "{at.session_state["ws.scene_id"]}").' in prompt  # its name, not only id
    asset_id = at.session_state["ws.active_asset_id"]
    assert f'In the player: "clip.mp4" (id "{asset_id}").' in prompt


def test_two_sessions_do_not_share_unsaved_state(data_dir: Path, fake_llm: FakeLLMServer, clip: bytes) -> None:
    alice = new_page()
    alice.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    bob = new_page({"project": alice.query_params["project"]})
    alice.number_input(key="player_playhead_s").set_value(2.0).run()
    fake_llm.chat.push(openai_text("Alice's answer"))
    send(alice, "Alice asks")
    bob.run()
    assert bob.session_state["ws.playhead_ms"] == 0
    assert bubbles(bob) == []  # Bob's open chat is his own (empty) one
    assert "clip.mp4" in "\n".join(texts(bob.sidebar.markdown))  # saved media is shared by the project
    chat_id = alice.query_params["chat"]
    assert bob.sidebar.button(key=f"conversations_open_{chat_id}").label.startswith("Alice asks — 1 question · ")


def test_long_conversation_shows_only_the_last_page_with_show_older(data_dir: Path) -> None:
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Long")
    chat = storage.create_conversation(project.id)
    for index in range(PAGE_SIZE * 2 + 5):
        role = "user" if index % 2 == 0 else "assistant"
        storage.append_message(chat.id, ChatMessage(role=role, content=f"message {index}"))
    storage.close()
    at = new_page({"project": project.id, "chat": chat.id})
    shown = bubbles(at)
    assert len(shown) == PAGE_SIZE
    assert shown[-1][1] == f"message {PAGE_SIZE * 2 + 4}"
    older = at.button(key="chat_show_older")
    assert "(45 hidden)" in older.label
    older.click().run()
    assert len(bubbles(at)) == PAGE_SIZE * 2
    at.button(key="chat_show_older").click().run()
    assert len(bubbles(at)) == PAGE_SIZE * 2 + 5
    assert "chat_show_older" not in [button.key for button in at.button]


def test_transcript_segment_click_moves_the_playhead(
    data_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, clip: bytes
) -> None:
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "openai")
    monkeypatch.setenv("TRANSCRIBE_MODEL", "fake-whisper")
    at = new_page()
    at.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    asset_id = str(at.session_state["ws.active_asset_id"])
    fake_llm.transcription.push(
        transcription_reply("hello harbour", segments=[(0.0, 1.0, "hello"), (2.0, 2.9, "harbour")])
    )
    transcribe_on_page(at, asset_id, data_dir)
    assert not at.exception
    click_on_page(at, "seek", page_words(at)["rows"][1]["start"])  # st.video on the page: the server seeks
    assert at.session_state["ws.playhead_ms"] == 2000
    assert at.number_input(key="player_playhead_s").value == 2.0
    assert at.main.get("video")[0].proto.start_time == 2
    fake_llm.chat.push(openai_text("You are at the harbour line."))
    send(at, "Where am I?")
    assert "(2000 ms)" in fake_llm.chat.last.json["messages"][0]["content"]


def test_file_names_are_shown_literally(data_dir: Path, clip: bytes) -> None:
    at = new_page()
    at.sidebar.file_uploader[0].upload("![pic](x) *loud* <b>.mp4", clip, "video/mp4").run()
    listed = "\n".join(str(markdown.value) for markdown in at.sidebar.markdown)
    assert f"**{escape_markdown('![pic](x) *loud* <b>.mp4')}**" in listed


def test_unusable_data_directory_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    configure_env(monkeypatch, blocked / "data", None)
    at = new_page()
    assert "cannot be used (setting AGENT_DATA_DIR)" in texts(at.main.error)[0]


def test_same_named_assets_and_projects_can_each_be_picked(data_dir: Path, clip: bytes, tmp_path: Path) -> None:
    """The browser returns a picker's label; two records with one name must still be told apart."""
    at = new_page()
    at.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    another_take = make_video(tmp_path / "take2.mp4", seconds=1.0).read_bytes()
    at.sidebar.file_uploader[0].upload("clip.mp4", another_take, "video/mp4").run()
    storage = SqliteStorage(data_dir)
    first, second = (asset.id for asset in storage.list_assets(at.query_params["project"]))
    picker = at.selectbox(key="player_asset")
    assert [picker.format_func(option) for option in picker.options] == ["clip.mp4", "clip.mp4 (2)"]
    picker.set_value(first).run()
    assert at.session_state["ws.active_asset_id"] == first
    at.number_input(key="player_playhead_s").set_value(2.0).run()
    assert at.session_state["ws.active_asset_id"] == first and at.session_state["ws.playhead_ms"] == 2000
    assert second != first
    original = at.query_params["project"]
    at.sidebar.text_input(key="sidebar_new_project").input(storage.list_projects()[0].name)
    at.sidebar.button(key="sidebar_create_project").click().run()
    at.sidebar.selectbox(key="sidebar_project").select(original).run()
    assert at.query_params["project"] == original


def test_media_buttons_have_words_and_names_stay_literal(data_dir: Path, clip: bytes) -> None:
    """Keyboard and screen-reader users get "Play"/"Remove", not an icon's name; tooltips and scene
    options are Markdown, so names are escaped there too."""
    at = new_page()
    at.sidebar.file_uploader[0].upload("*clip*.mp4", clip, "video/mp4").run()
    asset_id = str(at.session_state["ws.active_asset_id"])
    play, remove = (
        at.sidebar.button(key=f"sidebar_play_{asset_id}"),
        at.sidebar.button(key=f"sidebar_remove_{asset_id}"),
    )
    assert (play.label, remove.label) == ("Play", "Remove")
    assert play.disabled and not remove.disabled  # this file is in the player already
    assert remove.help == f"Remove {escape_markdown('*clip*.mp4')} from the project"
    at.sidebar.text_input(key="sidebar_new_scene").input("**Intro** ![x](https://example.com/x.png)")
    at.sidebar.button(key="sidebar_add_scene").click().run()
    assert at.sidebar.radio(key="sidebar_scene").options == [
        escape_markdown("**Intro** ![x](https://example.com/x.png)")
    ]


def test_rename_project(data_dir: Path) -> None:
    at = new_page()
    at.sidebar.button(key="sidebar_rename_project_button").click().run()
    assert texts(at.sidebar.error) == ["Type the project's new name first."]
    at.sidebar.text_input(key="sidebar_rename_project").input("  Harbour   cut ")
    at.sidebar.button(key="sidebar_rename_project_button").click().run()
    assert "Harbour cut" in texts(at.main.header)
    assert at.sidebar.text_input(key="sidebar_rename_project").value == ""
    assert [p.name for p in SqliteStorage(data_dir).list_projects()] == ["Harbour cut"]
    assert not at.sidebar.error


def test_the_same_file_uploaded_twice_is_stored_once(data_dir: Path, clip: bytes, tmp_path: Path) -> None:
    at = new_page()
    at.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    other = make_video(tmp_path / "other.mp4", seconds=1.0).read_bytes()
    at.sidebar.file_uploader[0].set_value([("other.mp4", other, "video/mp4"), ("copy.mp4", clip, "video/mp4")]).run()
    assert texts(at.sidebar.info) == ["“copy.mp4” is already in the library as “clip.mp4”."]
    storage = SqliteStorage(data_dir)
    assets = storage.list_assets(at.query_params["project"])
    assert [a.name for a in assets] == ["clip.mp4", "other.mp4"]
    assert len(list((data_dir / "media").iterdir())) == 2


def test_mistyped_upload_limit_is_explained_and_the_page_still_works(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    monkeypatch.setenv("AGENT_MAX_UPLOAD_MB", "0.5")
    at = new_page()
    [error] = texts(at.sidebar.error)
    assert "Uploads are off" in error and "AGENT_MAX_UPLOAD_MB" in error
    assert not at.sidebar.file_uploader
    fake_llm.chat.push(openai_text("Still here."))
    assert bubbles(send(at, "Hello"))[-1] == ("assistant", "Still here.")


def test_mistyped_storage_setting_is_explained(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_DB_BUSY_TIMEOUT_MS", "soon")
    at = new_page()
    [error] = texts(at.main.error)
    assert "AGENT_DB_BUSY_TIMEOUT_MS must be an integer" in error and "Settings go in" in error
