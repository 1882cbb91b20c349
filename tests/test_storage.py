"""The storage contract on both backends (ids ``sqlite`` and ``postgres``): projects, scenes, media import,
conversations and messages, against a real SQLite file or a real PostgreSQL server, and real media made
with PyAV; what only one backend has (SQLite's WAL file, its busy lock) is tested on that one."""

from __future__ import annotations

import io
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.settings import SettingsError, load_settings
from agent_app.storage import (
    AssetRejectedError,
    NotFoundError,
    PostgresStorage,
    ProjectMediaLibrary,
    SqliteStorage,
    Storage,
    StorageError,
    open_storage,
    postgres_schema,
    schema,
)
from agent_app.types import ChatMessage, MediaLibrary, ToolCall, ToolResult
from tests.media_samples import make_png, make_video, make_wav
from tests.storage_backends import (
    BACKENDS,
    AnyStorage,
    Backend,
    another_writer_holding_the_lock,
    backend_for,
    raw_rows,
    set_schema_version,
    stored_path,
)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def current_schema_version(backend: Backend) -> int:
    return schema.SCHEMA_VERSION if backend.name == "sqlite" else postgres_schema.SCHEMA_VERSION


@pytest.fixture(scope="module")
def sample_video(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_video(tmp_path_factory.mktemp("media") / "clip.mp4", seconds=1.0).read_bytes()


def media_files(store: Storage) -> list[Path]:
    return sorted((store.data_dir / "media").iterdir())


def test_storage_implements_the_interfaces(storage: Storage) -> None:
    assert isinstance(storage, Storage)
    assert isinstance(storage, MediaLibrary)


def test_projects_and_scenes_round_trip(storage: Storage) -> None:
    project = storage.create_project("  My   film ")
    assert project.name == "My film"
    assert storage.list_projects() == [project]
    first = storage.create_scene(project.id, "Intro")
    second = storage.create_scene(project.id, "")
    assert [scene.name for scene in storage.list_scenes(project.id)] == ["Intro", "Scene 2"]
    renamed = storage.rename_scene(second.id, "Outro")
    assert renamed.name == "Outro"
    assert storage.get_scene(second.id) == renamed
    assert storage.list_scenes(project.id)[0] == first
    assert storage.rename_project(project.id, "Final cut").name == "Final cut"


def test_scene_of_unknown_project_is_refused(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        storage.create_scene("nope", "Intro")
    with pytest.raises(NotFoundError):
        storage.rename_scene("nope", "x")


def test_import_video_records_metadata_under_a_generated_name(storage: Storage, sample_video: bytes) -> None:
    project = storage.create_project("p")
    asset = storage.import_asset(project.id, "../../etc/My Holiday.MP4", io.BytesIO(sample_video))
    assert asset.name == "My Holiday.MP4"
    assert asset.kind == "video"
    assert asset.mime_type == "video/mp4"
    assert asset.size_bytes == len(sample_video)
    assert asset.duration_ms is not None and 900 <= asset.duration_ms <= 1200
    path = stored_path(storage, asset.id)
    assert path is not None and path.read_bytes() == sample_video
    assert path.parent == storage.data_dir / "media"
    assert path.name == f"{asset.id}.mp4"
    assert "Holiday" not in path.name
    assert storage.list_assets(project.id) == [asset]
    assert storage.get_asset(asset.id) == asset


def test_import_audio_is_an_audio_asset(storage: Storage, tmp_path: Path) -> None:
    project = storage.create_project("p")
    wav = make_wav(tmp_path / "voice.wav", seconds=2.0)
    with wav.open("rb") as handle:
        asset = storage.import_asset(project.id, "voice.wav", handle)
    assert asset.kind == "audio"
    assert asset.mime_type == "audio/wav"
    assert asset.duration_ms is not None and 1900 <= asset.duration_ms <= 2100


def test_upload_too_large_is_rejected_and_leaves_nothing(backend: Backend, sample_video: bytes) -> None:
    store = backend.open()
    project = store.create_project("p")
    with pytest.raises(AssetRejectedError, match="too large"):
        store.import_asset(project.id, "clip.mp4", io.BytesIO(sample_video), max_bytes=len(sample_video) - 1)
    assert media_files(store) == []
    assert store.list_assets(project.id) == []


def test_upload_limit_comes_from_the_setting(
    storage: Storage, monkeypatch: pytest.MonkeyPatch, sample_video: bytes
) -> None:
    project = storage.create_project("p")
    monkeypatch.setenv("AGENT_MAX_UPLOAD_MB", "1")
    limit = load_settings().max_upload_bytes
    big = io.BytesIO(b"\0" * (1024 * 1024 + 1))
    with pytest.raises(AssetRejectedError, match="AGENT_MAX_UPLOAD_MB"):
        storage.import_asset(project.id, "big.mp4", big, max_bytes=limit)
    assert storage.import_asset(project.id, "clip.mp4", io.BytesIO(sample_video), max_bytes=limit).kind == "video"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("notes.mp4", b"this is just text pretending to be a video", "not a readable audio or video"),
        ("notes.txt", b"text", "not a supported media file"),
        ("empty.mp3", b"", "is empty"),
        ("noextension", b"abc", "not a supported media file"),
    ],
)
def test_non_media_upload_is_rejected_with_a_clear_message(
    storage: Storage, name: str, content: bytes, message: str
) -> None:
    project = storage.create_project("p")
    with pytest.raises(AssetRejectedError, match=message):
        storage.import_asset(project.id, name, io.BytesIO(content))
    assert media_files(storage) == []
    assert storage.list_assets(project.id) == []


def test_an_image_renamed_as_video_is_rejected(storage: Storage, tmp_path: Path) -> None:
    project = storage.create_project("p")
    png = make_png(tmp_path / "frame.png")
    with pytest.raises(AssetRejectedError, match="not a readable audio or video"):
        storage.import_asset(project.id, "frame.mp4", io.BytesIO(png.read_bytes()))
    assert media_files(storage) == []


def test_remove_asset_deletes_row_and_file(storage: Storage, sample_video: bytes) -> None:
    project = storage.create_project("p")
    asset = storage.import_asset(project.id, "clip.mp4", io.BytesIO(sample_video))
    storage.remove_asset(asset.id)
    assert storage.get_asset(asset.id) is None
    assert stored_path(storage, asset.id) is None
    assert media_files(storage) == []
    with pytest.raises(NotFoundError):
        storage.remove_asset(asset.id)


def test_deleting_a_project_deletes_its_media_conversations_and_runs(storage: Storage, sample_video: bytes) -> None:
    doomed, kept = storage.create_project("doomed"), storage.create_project("kept")
    scene = storage.create_scene(doomed.id, "Opening")
    asset = storage.import_asset(doomed.id, "clip.mp4", io.BytesIO(sample_video))
    kept_asset = storage.import_asset(kept.id, "clip.mp4", io.BytesIO(sample_video))
    chat = storage.create_conversation(doomed.id, "Storm")
    storage.append_message(chat.id, ChatMessage(role="user", content="What about the storm?"))
    run = storage.run_store().create_run(chat.id, None, [], owner="someone", lease_until=10**13)
    kept_chat = storage.create_conversation(kept.id, "Boats")
    storage.delete_project(doomed.id)
    assert storage.get_project(doomed.id) is None and [p.id for p in storage.list_projects()] == [kept.id]
    assert storage.get_scene(scene.id) is None and storage.get_asset(asset.id) is None
    assert storage.get_conversation(chat.id) is None and storage.load_messages(chat.id) == []
    assert storage.run_store().get_run(run.id) is None
    kept_path = stored_path(storage, kept_asset.id)
    assert media_files(storage) == [kept_path] and storage.get_conversation(kept_chat.id) is not None
    with pytest.raises(NotFoundError, match="This project no longer exists") as gone:
        storage.delete_project(doomed.id)
    assert doomed.id not in str(gone.value)  # an error never names an internal id


def test_project_media_library_only_sees_its_project(storage: Storage, sample_video: bytes) -> None:
    mine, other = storage.create_project("mine"), storage.create_project("other")
    asset = storage.import_asset(other.id, "clip.mp4", io.BytesIO(sample_video))
    library = ProjectMediaLibrary(storage, mine.id)
    assert isinstance(library, MediaLibrary)
    assert library.get_asset(asset.id) is None
    assert stored_path(library, asset.id) is None
    theirs = ProjectMediaLibrary(storage, other.id)
    assert theirs.get_asset(asset.id) == asset
    assert stored_path(theirs, asset.id) == stored_path(storage, asset.id)


def test_messages_are_stored_as_camel_case_json_in_order(storage: Storage, backend: Backend) -> None:
    project = storage.create_project("p")
    chat = storage.create_conversation(project.id)
    call = ToolCall(id="call-1", name="transcribe_video", args={"assetId": "a1"})
    messages = [
        ChatMessage(role="user", content="What is said in the intro?"),
        ChatMessage(role="assistant", content="", tool_calls=[call], provider_metadata={"raw": [1, 2]}),
        ChatMessage(
            role="tool",
            content="transcribed",
            tool_result=ToolResult(
                tool_call_id="call-1", name="transcribe_video", result={"text": "hi"}, duration_ms=5
            ),
        ),
        ChatMessage(role="assistant", content="They say hi."),
    ]
    for message in messages:
        storage.append_message(chat.id, message)
    assert storage.load_messages(chat.id) == messages
    assert storage.load_messages(chat.id, limit=2) == messages[2:]
    assert storage.count_messages(chat.id) == 4
    bodies = [json.loads(str(row[0])) for row in raw_rows(backend, "SELECT body FROM messages ORDER BY seq")]
    assert bodies[1]["toolCalls"] == [{"id": "call-1", "name": "transcribe_video", "args": {"assetId": "a1"}}]
    assert bodies[1]["providerMetadata"] == {"raw": [1, 2]}
    assert bodies[2]["toolResult"]["toolCallId"] == "call-1"
    stored = storage.get_conversation(chat.id)
    assert stored is not None and stored.title == "What is said in the intro?" and stored.message_count == 4


def test_appending_a_stored_message_id_replaces_it(storage: Storage) -> None:
    project = storage.create_project("p")
    chat = storage.create_conversation(project.id)
    message = ChatMessage(role="assistant", content="draft")
    storage.append_message(chat.id, message)
    storage.append_message(chat.id, message.model_copy(update={"content": "final"}))
    assert [m.content for m in storage.load_messages(chat.id)] == ["final"]


def test_message_to_unknown_conversation_is_refused(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        storage.append_message("missing", ChatMessage(role="user", content="hi"))


def test_conversations_list_most_recent_first_and_persistence_writes_through(storage: Storage) -> None:
    project = storage.create_project("p")
    old = storage.create_conversation(project.id)
    new = storage.create_conversation(project.id)
    persistence = storage.chat_persistence(old.id)
    persistence.message_added(ChatMessage(role="user", content="first chat"))
    assert [c.id for c in storage.list_conversations(project.id)] == [old.id, new.id]
    persistence.messages_cleared()
    assert storage.load_messages(old.id) == []
    assert storage.load_messages(new.id) == []
    with pytest.raises(NotFoundError):
        storage.chat_persistence("missing")


def test_data_survives_reopening(backend: Backend, sample_video: bytes) -> None:
    first = backend.open()
    project = first.create_project("p")
    chat = first.create_conversation(project.id)
    first.append_message(chat.id, ChatMessage(role="user", content="hello"))
    asset = first.import_asset(project.id, "clip.mp4", io.BytesIO(sample_video))
    first.close()
    second = backend.open()
    assert [m.content for m in second.load_messages(chat.id)] == ["hello"]
    assert stored_path(second, asset.id) is not None
    assert second.schema_version() == current_schema_version(backend)


def test_database_uses_wal(tmp_path: Path) -> None:
    SqliteStorage(tmp_path / "data").close()
    connection = sqlite3.connect(tmp_path / "data" / "agent.sqlite3")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_database_from_a_newer_app_is_refused(backend: Backend) -> None:
    backend.open().close()
    set_schema_version(backend, current_schema_version(backend) + 1)
    with pytest.raises(StorageError, match="newer"):
        backend.open()


def test_concurrent_writers_lose_nothing(storage: AnyStorage, backend: Backend) -> None:
    project = storage.create_project("p")
    chats = [storage.create_conversation(project.id) for _ in range(4)]
    other_process_view = backend.open()  # a second instance, as another process would be
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        target = storage if index % 2 else other_process_view
        try:
            for n in range(50):
                target.append_message(chats[index].id, ChatMessage(role="user", content=f"{index}-{n}"))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            target.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for index, chat in enumerate(chats):
        assert [m.content for m in storage.load_messages(chat.id)] == [f"{index}-{n}" for n in range(50)]
    if backend.name == "sqlite":
        check = sqlite3.connect(storage.data_dir / "agent.sqlite3").execute("PRAGMA integrity_check").fetchone()[0]
        assert check == "ok"


def test_open_storage_uses_agent_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_DATABASE_URL", raising=False)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "elsewhere"))
    store = open_storage(load_settings())
    assert isinstance(store, SqliteStorage)
    assert store.data_dir == (tmp_path / "elsewhere").resolve()
    assert (tmp_path / "elsewhere" / "agent.sqlite3").is_file()


def test_open_storage_uses_postgresql_at_agent_database_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "media-here"))
    monkeypatch.setenv("AGENT_DATABASE_URL", postgres_url)
    store = open_storage(load_settings())
    assert isinstance(store, PostgresStorage)
    try:
        assert open_storage(load_settings()) is store  # one pool per database, shared by every session
        project = store.create_project("shared")
        assert [p.name for p in store.list_projects()] == ["shared"]
        assert store.data_dir == (tmp_path / "media-here").resolve()
        assert (tmp_path / "media-here" / "media").is_dir()
        assert not (tmp_path / "media-here" / "agent.sqlite3").exists()
        assert project.id
    finally:
        store.close_pool()


def test_an_unusable_agent_database_url_is_named_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_DATABASE_URL", "mysql://user:hunter2-secret@db/app")
    settings = load_settings()
    with pytest.raises(SettingsError, match="AGENT_DATABASE_URL") as raised:
        open_storage(settings)
    assert "hunter2" not in str(raised.value) and "hunter2" not in repr(settings)


def test_a_write_blocked_by_another_writer_fails_cleanly(backend: Backend) -> None:
    store = backend.open(busy_timeout_ms=100)
    project = store.create_project("p")
    chat = store.create_conversation(project.id)
    with another_writer_holding_the_lock(backend), pytest.raises(StorageError, match="could not be written"):
        store.append_message(chat.id, ChatMessage(role="user", content="hello"))
    store.append_message(chat.id, ChatMessage(role="user", content="hello"))  # the connection still works
    assert [m.content for m in store.load_messages(chat.id)] == ["hello"]


def test_names_lose_invisible_and_direction_changing_characters(storage: Storage, sample_video: bytes) -> None:
    """``harbour\\u202egnp.mp4`` would show as ``harbour4pm.png``; zero-width and control characters hide text."""
    asset = storage.import_asset(storage.create_project("P").id, "harbour\u202egnp.mp4", io.BytesIO(sample_video))
    assert asset.name == "harbourgnp.mp4"
    project = storage.create_project("Bad\u200b\u2066 name\x07")
    assert project.name == "Bad name"
    hidden = "\u0085\u00ad\u061c\u200e\u2028\u2069\u206a\ufeff"  # C1, soft hyphen, marks, separators, isolates
    assert storage.create_project(f"Sc{hidden}ene").name == "Scene"
