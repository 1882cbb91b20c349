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
    # 2: runs (one orchestrator turn each, executed off the page) and the events they record.
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        state TEXT NOT NULL
            CHECK (state IN ('queued', 'running', 'answered', 'error', 'stopped', 'interrupted')),
        context TEXT,
        stop_requested INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        error_kind TEXT,
        owner TEXT NOT NULL,
        lease_until INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
    );
    CREATE UNIQUE INDEX one_active_run_per_conversation ON runs(conversation_id)
        WHERE state IN ('queued', 'running');
    CREATE INDEX runs_by_conversation ON runs(conversation_id, created_at);
    CREATE INDEX active_runs_by_owner ON runs(owner) WHERE state IN ('queued', 'running');
    CREATE TABLE run_events (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
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
        created_at INTEGER NOT NULL,
        signed_out_at INTEGER
    );
    CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        owner_issuer TEXT NOT NULL,
        owner_subject TEXT NOT NULL,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
    );
    CREATE INDEX api_tokens_by_owner ON api_tokens(owner_issuer, owner_subject, created_at);
    """,
    # 4: transcription jobs of the page (progress, Stop and lease readable by every tab and process).
    """
    CREATE TABLE transcriptions (
        id TEXT PRIMARY KEY,
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        language TEXT,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'error', 'stopped', 'interrupted')),
        fraction REAL NOT NULL DEFAULT 0,
        message TEXT NOT NULL DEFAULT '',
        error TEXT,
        stop_requested INTEGER NOT NULL DEFAULT 0,
        owner TEXT NOT NULL,
        lease_until INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
    );
    CREATE UNIQUE INDEX one_active_transcription_per_asset ON transcriptions(asset_id)
        WHERE state IN ('queued', 'running');
    CREATE INDEX transcriptions_by_asset ON transcriptions(asset_id, created_at);
    """,
    # 5: the user's edits of an asset's transcript: corrected segments (beside the machine's text) and speakers' names.
    """
    CREATE TABLE transcript_corrections (
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        start_ms INTEGER NOT NULL,
        original_text TEXT NOT NULL,
        text TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (asset_id, start_ms)
    );
    CREATE TABLE speaker_names (
        asset_id TEXT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
        speaker TEXT NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (asset_id, speaker)
    );
    """,
    # 6: an event's seq from its run's counter (not MAX(seq) + 1), and the recently ended runs found by index
    # (another process's wake-ups read the counters of live and just-ended runs).
    """
    ALTER TABLE runs ADD COLUMN last_event_seq INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET last_event_seq = COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = runs.id), 0);
    CREATE INDEX runs_by_finish ON runs(finished_at) WHERE finished_at IS NOT NULL;
    """,
    # 7: a transcription job's kind: the transcript (Transcribe) or the speaker turns (Find speakers).
    """
    ALTER TABLE transcriptions ADD COLUMN kind TEXT NOT NULL DEFAULT 'transcript'
        CHECK (kind IN ('transcript', 'speakers'));
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
