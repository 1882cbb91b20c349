"""The shared-database :class:`~agent_app.storage.base.Storage`: rows in PostgreSQL (``AGENT_DATABASE_URL``),
media files in a media store (the local disk under ``data_dir/media`` as with SQLite, or a bucket), put
together from the modules that hold each kind of row.
"""

from __future__ import annotations

from pathlib import Path

from psycopg import errors

from agent_app.storage.base import CONVERSATION_GONE, NotFoundError
from agent_app.storage.media_import import remove_stale_parts
from agent_app.storage.media_store import LocalMediaStore, MediaStore
from agent_app.storage.persistence import ConversationPersistence
from agent_app.storage.postgres_accounts import PostgresAccountStore
from agent_app.storage.postgres_assets import PostgresAssetRows
from agent_app.storage.postgres_conversations import PostgresConversationRows
from agent_app.storage.postgres_database import DEFAULT_MAX_CONNECTIONS, PostgresDatabase
from agent_app.storage.postgres_projects import PostgresProjectRows
from agent_app.storage.postgres_runs import PostgresRunStore
from agent_app.storage.postgres_transcript_edits import PostgresTranscriptEditRows
from agent_app.storage.sqlite_database import DEFAULT_BUSY_TIMEOUT_MS
from agent_app.storage.transcription_rows import SqlTranscriptionStore


class PostgresStorage(PostgresProjectRows, PostgresAssetRows, PostgresConversationRows, PostgresTranscriptEditRows):
    """Projects, scenes, assets, conversations, messages and runs in PostgreSQL; media files in ``media_store``.

    ``database_url`` holds a password: it is never logged or put in an error. ``busy_timeout_ms`` is how
    long a write waits for another writer's lock (or for a free pooled connection) before it fails with a
    :class:`StorageError`; so does a server that cannot be reached when opened.
    """

    def __init__(
        self,
        data_dir: Path,
        database_url: str,
        *,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        media_store: MediaStore | None = None,
    ) -> None:
        self._data_dir = Path(data_dir)
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self._media_store = media_store or LocalMediaStore(self._data_dir)
        remove_stale_parts(self._media_store.staging_dir)
        self._db = PostgresDatabase(database_url, busy_timeout_ms, max_connections=max_connections)

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def close(self) -> None:
        """Nothing to release per thread: every statement has returned its pooled connection already."""

    def close_pool(self) -> None:
        """Close the pool's connections: at the end of a test or a process."""
        self._db.close_pool()

    def schema_version(self) -> int:
        return self._db.schema_version()

    def transcription_store(self) -> SqlTranscriptionStore:
        """The page's transcription jobs, in this database."""
        return SqlTranscriptionStore(self._db.read, self._db.write, "%s", errors.UniqueViolation)

    def run_store(self) -> PostgresRunStore:
        """Runs and their events, in this database (see :mod:`agent_app.storage.postgres_runs`)."""
        return PostgresRunStore(self._db)

    def accounts(self) -> PostgresAccountStore:
        """Sign-ins and API token hashes, in this database (see :mod:`agent_app.storage.accounts`)."""
        return PostgresAccountStore(self._db)

    def chat_persistence(self, conversation_id: str) -> ConversationPersistence:
        """The chat store hook that writes this conversation's messages as they are appended."""
        if self.get_conversation(conversation_id) is None:
            raise NotFoundError(CONVERSATION_GONE)
        return ConversationPersistence(self, conversation_id)
