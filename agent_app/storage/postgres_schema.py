"""The PostgreSQL schema as numbered migrations, tracked in the one-row ``schema_version`` table.

The same tables as SQLite's :mod:`agent_app.storage.schema`, numbered alike (1: projects to messages,
2: runs, 3: owners, sign-ins, API tokens), so the copy from SQLite and the contract tests see one model.
What PostgreSQL needs besides: an identity ``seq`` where SQLite orders by ``rowid``, the folded text the
search matches (SQLite folds in a Python function at query time), and each run's event counter (``seq``
from a counter, not ``MAX(seq) + 1``). Migrations only ever get appended; a database of a newer app is
refused rather than misread.

Migration 4 is the job queue's schema (procrastinate's own ``schema.sql`` of the pinned release, its tables
named ``procrastinate_*``), versioned with ours: a later procrastinate release that changes its schema gets
its own numbered step here, made of that release's migration files (``procrastinate/sql/migrations``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from agent_app.storage.base import StorageError


def _queue_schema() -> str:
    """procrastinate's ``schema.sql`` (what its ``SchemaManager.get_schema`` reads), found without importing
    the package: a SQLite app never loads the queue."""
    spec = importlib.util.find_spec("procrastinate")
    if spec is None or spec.origin is None:
        raise ImportError("procrastinate is not installed (see requirements.txt)")
    return (Path(spec.origin).parent / "sql" / "schema.sql").read_text(encoding="utf-8")


MIGRATIONS: tuple[str, ...] = (
    # 1: projects, scenes, assets, conversations, messages.
    """
    CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE scenes (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        position INTEGER NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX scenes_by_project ON scenes(project_id, position);
    CREATE TABLE assets (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('video', 'audio')),
        duration_ms BIGINT,
        size_bytes BIGINT NOT NULL,
        mime_type TEXT NOT NULL,
        file_name TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX assets_by_project ON assets(project_id, created_at, seq);
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        title TEXT NOT NULL DEFAULT '',
        title_folded TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE INDEX conversations_by_project ON conversations(project_id, updated_at);
    CREATE TABLE messages (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        said_folded TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        UNIQUE (conversation_id, id)
    );
    CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
    """,
    # 2: runs (one orchestrator turn each, executed off the page) and the events they record.
    """
    CREATE TABLE runs (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        state TEXT NOT NULL
            CHECK (state IN ('queued', 'running', 'answered', 'error', 'stopped', 'interrupted')),
        context TEXT,
        stop_requested BOOLEAN NOT NULL DEFAULT FALSE,
        error TEXT,
        error_kind TEXT,
        owner TEXT NOT NULL,
        lease_until BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        finished_at BIGINT,
        last_event_seq INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX one_active_run_per_conversation ON runs(conversation_id)
        WHERE state IN ('queued', 'running');
    CREATE INDEX runs_by_conversation ON runs(conversation_id, created_at, seq);
    CREATE INDEX active_runs_by_owner ON runs(owner) WHERE state IN ('queued', 'running');
    CREATE TABLE run_events (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """,
    # 3: projects belong to an owner (a sign-in's issuer and subject; '' for nobody signed in), the record of
    # sign-ins (so a cookie replayed after sign-out is refused) and personal API tokens (their hashes).
    """
    ALTER TABLE projects ADD COLUMN owner_issuer TEXT NOT NULL DEFAULT '';
    ALTER TABLE projects ADD COLUMN owner_subject TEXT NOT NULL DEFAULT '';
    CREATE INDEX projects_by_owner ON projects(owner_issuer, owner_subject, created_at);
    CREATE TABLE sign_ins (
        id TEXT PRIMARY KEY,
        owner_issuer TEXT NOT NULL,
        owner_subject TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        signed_out_at BIGINT
    );
    CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        owner_issuer TEXT NOT NULL,
        owner_subject TEXT NOT NULL,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
    );
    CREATE INDEX api_tokens_by_owner ON api_tokens(owner_issuer, owner_subject, created_at);
    """,
    # 4: the job queue (procrastinate 3.10.0's schema): agent turns as jobs on the shared database.
    _queue_schema(),
    # 5: transcription jobs of the page (SQLite's migration 4).
    """
    CREATE TABLE transcriptions (
        id TEXT PRIMARY KEY,
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        language TEXT,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'error', 'stopped', 'interrupted')),
        fraction DOUBLE PRECISION NOT NULL DEFAULT 0,
        message TEXT NOT NULL DEFAULT '',
        error TEXT,
        stop_requested BOOLEAN NOT NULL DEFAULT FALSE,
        owner TEXT NOT NULL,
        lease_until BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        finished_at BIGINT
    );
    CREATE UNIQUE INDEX one_active_transcription_per_asset ON transcriptions(asset_id)
        WHERE state IN ('queued', 'running');
    CREATE INDEX transcriptions_by_asset ON transcriptions(asset_id, created_at);
    """,
    # 6: the user's edits of an asset's transcript: corrected segments (beside the machine's text) and speakers' names.
    """
    CREATE TABLE transcript_corrections (
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        start_ms BIGINT NOT NULL,
        original_text TEXT NOT NULL,
        text TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (asset_id, start_ms)
    );
    CREATE TABLE speaker_names (
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        speaker TEXT NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (asset_id, speaker)
    );
    """,
    # 7: a transcription job's kind: the transcript (Transcribe) or the speaker turns (Find speakers).
    """
    ALTER TABLE transcriptions ADD COLUMN kind TEXT NOT NULL DEFAULT 'transcript'
        CHECK (kind IN ('transcript', 'speakers'));
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"

MIGRATION_LOCK = 0x6167_656E_7400_0001
"""The advisory lock key the upgrade holds, so two processes starting at once upgrade one after the other."""


def stored_version(db: psycopg.Connection[Any]) -> int:
    """The schema version the database holds; 0 for one this app never opened."""
    cursor = db.cursor(row_factory=tuple_row)
    present = cursor.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not present or not present[0]:
        return 0
    row = cursor.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def upgrade(db: psycopg.Connection[Any]) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction, under an advisory lock (DDL is
    transactional: an upgrade is all or nothing, and a second process waits, then finds it done); a
    current database is only read."""
    if stored_version(db) == SCHEMA_VERSION:
        return
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        db.execute(VERSION_TABLE)
        version = stored_version(db)
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"The database has schema version {version}, newer than this app understands "
                f"({SCHEMA_VERSION}); upgrade the app"
            )
        for number in range(version, SCHEMA_VERSION):
            db.execute(MIGRATIONS[number])
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
