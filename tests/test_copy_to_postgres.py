"""``python -m agent_app.storage.copy_to_postgres``: a SQLite data folder made by the app, copied into an empty
PostgreSQL database by the real command, reads back the same through the storage contract (ids, order,
times, counts, search, runs and their events); a database already holding projects is refused untouched."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from agent_app.runs.events import TextEvent, UsageEvent
from agent_app.storage import Owner, PostgresStorage, Project, SqliteStorage
from agent_app.types import ChatMessage, ToolCall, ToolResult, now_ms
from tests.media_samples import make_wav
from tests.storage_backends import stored_path

ROOT = Path(__file__).resolve().parent.parent


def run_copy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_app.storage.copy_to_postgres", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


ALICE = Owner(issuer="http://127.0.0.1:1", subject="alice")


def _all_projects(storage: SqliteStorage | PostgresStorage) -> list[Project]:
    return storage.list_projects() + storage.list_projects(ALICE)


def fill(storage: SqliteStorage, tmp_path: Path) -> None:
    """A data folder as a creator leaves it: two projects, scenes, media, conversations with tool traffic, runs."""
    film = storage.create_project("Harbour film")
    storage.create_project("Empty one", ALICE)  # a signed-in owner's, with her sign-in and API token
    storage.accounts().sign_in_active("sign-in-1", ALICE)
    storage.accounts().add_api_token(ALICE, "script", "hash-1")
    storage.create_scene(film.id, "Intro")
    storage.create_scene(film.id, "")
    wav = make_wav(tmp_path / "dawn.wav", seconds=0.2).read_bytes()
    for name in ("dawn.wav", "dusk.wav"):
        storage.import_asset(film.id, name, io.BytesIO(wav))
    storm = storage.create_conversation(film.id)
    call = ToolCall(id="c1", name="transcribe_video", args={"assetId": "a1"})
    for message in (
        ChatMessage(role="user", content="What is said at the Café?"),
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(role="tool", content="done", tool_result=ToolResult(tool_call_id="c1", name="transcribe_video")),
        ChatMessage(role="assistant", content="A storm is coming."),
    ):
        storage.append_message(storm.id, message)
    other = storage.create_conversation(film.id, "Named")
    runs = storage.run_store()
    done = runs.create_run(other.id, None, [ChatMessage(role="user", content="Hi")], owner="a", lease_until=now_ms())
    runs.mark_running(done.id)
    for delta in ("Hel", "lo"):
        runs.append_event(done.id, TextEvent(delta=delta))
    runs.finish_run(done.id, "answered")  # and its end event
    runs.create_run(storm.id, None, [], owner="b", lease_until=now_ms() + 600_000)  # still going


def test_a_sqlite_data_folder_copied_into_postgresql_reads_back_the_same(postgres_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    source = SqliteStorage(data_dir)
    fill(source, tmp_path)
    done = run_copy(str(data_dir), env={"AGENT_DATABASE_URL": postgres_url})  # the URL from the setting
    assert done.returncode == 0, done.stderr
    copied = "Copied 2 projects, 2 scenes, 2 assets, 2 conversations, 5 messages, 2 runs, 3 run_events, 1 sign_ins,"
    assert f"{copied} 1 api_tokens." in done.stdout
    assert postgres_url not in done.stdout + done.stderr
    copy = PostgresStorage(data_dir, postgres_url)
    try:
        assert _all_projects(copy) == _all_projects(source)
        assert copy.accounts().api_token_owner("hash-1") == ALICE
        assert not copy.accounts().sign_in_active("sign-in-1", Owner(issuer="", subject="bob"))
        for project in _all_projects(source):
            assert copy.list_scenes(project.id) == source.list_scenes(project.id)
            assert copy.list_assets(project.id) == source.list_assets(project.id)
            assert copy.find_assets(project.id, limit=5) == source.find_assets(project.id, limit=5)
            assert copy.list_conversations(project.id) == source.list_conversations(project.id)
            for conversation in source.list_conversations(project.id):
                assert copy.load_messages(conversation.id) == source.load_messages(conversation.id)
                source_runs, copied_runs = source.run_store(), copy.run_store()
                assert copied_runs.latest_run(conversation.id) == source_runs.latest_run(conversation.id)
                latest = source_runs.latest_run(conversation.id)
                assert latest is not None
                assert copied_runs.events(latest.id) == source_runs.events(latest.id)
            for words in (["cafe"], ["storm"], ["named"], ["transcribe"]):
                assert copy.search_conversations(project.id, words, limit=9) == source.search_conversations(
                    project.id, words, limit=9
                )
            for asset in source.list_assets(project.id):
                assert stored_path(copy, asset.id) == stored_path(source, asset.id) is not None
        film = next(p.id for p in source.list_projects() if p.name == "Harbour film")
        named = next(c for c in source.list_conversations(film) if c.title == "Named")
        finished = copy.run_store().latest_run(named.id)
        assert finished is not None and copy.run_store().append_event(finished.id, UsageEvent()) == 4  # counter carried
    finally:
        copy.close_pool()


def test_a_database_that_already_holds_projects_is_refused_untouched(postgres_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    fill(SqliteStorage(data_dir), tmp_path)
    assert run_copy(str(data_dir), postgres_url).returncode == 0
    again = run_copy(str(data_dir), postgres_url)
    assert again.returncode == 1 and "already holds projects" in again.stderr and "Nothing was copied" in again.stderr
    copy = PostgresStorage(data_dir, postgres_url)
    try:
        assert len(_all_projects(copy)) == 2
    finally:
        copy.close_pool()
    missing = run_copy(str(tmp_path / "nowhere"), postgres_url)
    assert missing.returncode == 1 and "not a data folder" in missing.stderr
