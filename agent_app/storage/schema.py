"""The SQLite schema as numbered migrations, tracked in ``PRAGMA user_version``.

Migrations only ever get appended: a database written by version N is upgraded step by step, and a
database from a newer version of the app is refused rather than misread.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: projects, scenes, assets, conversations, messages.
    """
    CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE scenes (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        position INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX scenes_by_project ON scenes(project_id, position);
    CREATE TABLE assets (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('video', 'audio')),
        duration_ms INTEGER,
        size_bytes INTEGER NOT NULL,
        mime_type TEXT NOT NULL,
        file_name TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX assets_by_project ON assets(project_id, created_at);
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        title TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX conversations_by_project ON conversations(project_id, updated_at);
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (conversation_id, id)
    );
    CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
