"""Versioned schemas, upgraded at start: a data folder written by the release before the shared database
(its SQLite schema as it shipped, written here with plain sqlite3 statements) opens with nothing lost, an
older one is upgraded, and a PostgreSQL database of an earlier schema version is upgraded in place."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import psycopg

from agent_app.runs.events import EndEvent, StatusEvent, TextEvent
from agent_app.storage import PostgresStorage, SqliteStorage, postgres_schema, schema
from agent_app.types import ChatMessage, now_ms
from tests.media_samples import make_wav
from tests.storage_backends import PostgresForTests, stored_path

RELEASED_SCHEMA_V1 = """
CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE scenes (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL, position INTEGER NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX scenes_by_project ON scenes(project_id, position);
CREATE TABLE assets (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('video', 'audio')), duration_ms INTEGER,
    size_bytes INTEGER NOT NULL, mime_type TEXT NOT NULL, file_name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE INDEX assets_by_project ON assets(project_id, created_at);
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX conversations_by_project ON conversations(project_id, updated_at);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (conversation_id, id));
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
"""
RELEASED_SCHEMA_V2 = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'answered', 'error', 'stopped', 'interrupted')),
    context TEXT, stop_requested INTEGER NOT NULL DEFAULT 0, error TEXT, error_kind TEXT, owner TEXT NOT NULL,
    lease_until INTEGER NOT NULL, created_at INTEGER NOT NULL, finished_at INTEGER);
CREATE UNIQUE INDEX one_active_run_per_conversation ON runs(conversation_id) WHERE state IN ('queued', 'running');
CREATE INDEX runs_by_conversation ON runs(conversation_id, created_at);
CREATE INDEX active_runs_by_owner ON runs(owner) WHERE state IN ('queued', 'running');
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    data TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
"""
"""The schema as the release before this one wrote it (schema.py's migrations 1 and 2 as they shipped)."""

QUESTION = ChatMessage(id="m1", role="user", content="What is said at the harbour?", created_at=1_000)
ANSWER = ChatMessage(id="m2", role="assistant", content="Boats, mostly.", created_at=1_001)


EVENT = "INSERT INTO run_events (run_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)"


def released_rows(with_runs: bool) -> list[tuple[str, tuple[object, ...]]]:
    rows: list[tuple[str, tuple[object, ...]]] = [
        ("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)", ("p1", "Harbour film", 100)),
        ("INSERT INTO scenes (id, project_id, name, position, created_at) VALUES (?, ?, ?, ?, ?)",
         ("s1", "p1", "Intro", 0, 101)),
        ("INSERT INTO assets (id, project_id, name, kind, duration_ms, size_bytes, mime_type, file_name, created_at)"
         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
         ("a1", "p1", "dawn.wav", "audio", 100, 3244, "audio/wav", "a1.wav", 102)),
        ("INSERT INTO conversations (id, project_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
         ("c1", "p1", QUESTION.content, 103, 105)),
        ("INSERT INTO messages (id, conversation_id, role, body, created_at) VALUES (?, ?, ?, ?, ?)",
         ("m1", "c1", "user", QUESTION.model_dump_json(by_alias=True, exclude_none=True), 104)),
        ("INSERT INTO messages (id, conversation_id, role, body, created_at) VALUES (?, ?, ?, ?, ?)",
         ("m2", "c1", "assistant", ANSWER.model_dump_json(by_alias=True, exclude_none=True), 105)),
    ]  # fmt: skip
    if with_runs:
        rows += [
            ("INSERT INTO runs (id, conversation_id, state, owner, lease_until, created_at, finished_at)"
             " VALUES (?, ?, ?, ?, ?, ?, ?)", ("r1", "c1", "answered", "old-server", 200, 104, 106)),
            (EVENT, ("r1", 1, "text", json.dumps({"delta": "Boats"}), 105)),
            (EVENT, ("r1", 2, "end", json.dumps({"state": "answered"}), 106)),
        ]  # fmt: skip
    return rows


def write_released_folder(data_dir: Path, version: int) -> None:
    """A data folder as the released app left it, at schema ``version`` (1 or 2), with a media file."""
    (data_dir / "media").mkdir(parents=True)
    make_wav(data_dir / "media" / "a1.wav", seconds=0.1)
    with contextlib.closing(sqlite3.connect(data_dir / "agent.sqlite3")) as db:
        db.executescript(RELEASED_SCHEMA_V1 + (RELEASED_SCHEMA_V2 if version == 2 else ""))
        for sql, params in released_rows(with_runs=version == 2):
            db.execute(sql, params)
        db.execute(f"PRAGMA user_version = {version}")
        db.commit()


def assert_everything_is_there(storage: SqliteStorage | PostgresStorage, with_runs: bool) -> None:
    [project] = storage.list_projects()
    assert (project.id, project.name, project.created_at) == ("p1", "Harbour film", 100)
    assert [(s.id, s.name, s.position) for s in storage.list_scenes("p1")] == [("s1", "Intro", 0)]
    [asset] = storage.list_assets("p1")
    assert (asset.id, asset.name, asset.kind, asset.duration_ms, asset.size_bytes) == (
        "a1",
        "dawn.wav",
        "audio",
        100,
        3244,
    )
    assert stored_path(storage, "a1") is not None
    conversation = storage.get_conversation("c1")
    assert conversation is not None and conversation.title == QUESTION.content
    assert (conversation.message_count, conversation.question_count, conversation.updated_at) == (2, 1, 105)
    assert storage.load_messages("c1") == [QUESTION, ANSWER]
    assert [c.id for c in storage.search_conversations("p1", ["boats"], limit=5)] == ["c1"]
    runs = storage.run_store()
    if with_runs:
        run = runs.latest_run("c1")
        assert run is not None and (run.id, run.state, run.finished_at) == ("r1", "answered", 106)
        assert [(e.seq, e.data) for e in runs.events("r1")] == [
            (1, TextEvent(delta="Boats")),
            (2, EndEvent(state="answered")),
        ]
    new_run = runs.create_run("c1", None, [], owner="new-server", lease_until=now_ms() + 60_000)
    assert runs.append_event(new_run.id, StatusEvent(status="responding")) == 1


def test_a_data_folder_written_by_the_released_app_opens_with_nothing_lost(tmp_path: Path) -> None:
    write_released_folder(tmp_path / "data", version=2)
    storage = SqliteStorage(tmp_path / "data")
    assert storage.schema_version() == schema.SCHEMA_VERSION
    assert_everything_is_there(storage, with_runs=True)


def test_a_data_folder_from_before_runs_is_upgraded_with_nothing_lost(tmp_path: Path) -> None:
    write_released_folder(tmp_path / "data", version=1)
    storage = SqliteStorage(tmp_path / "data")
    assert storage.schema_version() == schema.SCHEMA_VERSION
    assert_everything_is_there(storage, with_runs=False)


def test_a_postgresql_database_of_an_earlier_version_is_upgraded_in_place(
    postgres_server: PostgresForTests, tmp_path: Path
) -> None:
    server = postgres_server.server
    name = server.create_database()
    url = server.url(name)
    try:
        with psycopg.connect(url) as db:  # what the first version of the PostgreSQL schema wrote
            db.execute(postgres_schema.MIGRATIONS[0].encode())
            db.execute(postgres_schema.VERSION_TABLE.encode())
            db.execute("INSERT INTO schema_version VALUES (1)")
            for sql, params in released_rows(with_runs=False):
                db.execute(sql.replace("?", "%s").encode(), params)
            db.execute("UPDATE conversations SET title_folded = lower(title)")
            db.execute("UPDATE messages SET said_folded = 'boats, mostly.' WHERE id = 'm2'")
        (tmp_path / "data" / "media").mkdir(parents=True)
        make_wav(tmp_path / "data" / "media" / "a1.wav", seconds=0.1)
        storage = PostgresStorage(tmp_path / "data", url)
        try:
            assert storage.schema_version() == postgres_schema.SCHEMA_VERSION
            assert_everything_is_there(storage, with_runs=False)
        finally:
            storage.close_pool()
    finally:
        server.drop_database(name)
