"""The default :class:`~agent_app.storage.base.Storage`: ``agent.sqlite3`` under ``data_dir``, media files in a
media store (``data_dir/media/<generated id>.<ext>`` unless given another), put together from the modules that
hold each kind of row.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from agent_app.storage.base import CONVERSATION_GONE, NotFoundError
from agent_app.storage.media_import import remove_stale_parts
from agent_app.storage.media_store import LocalMediaStore, MediaStore
from agent_app.storage.persistence import ConversationPersistence
from agent_app.storage.sqlite_accounts import SqliteAccountStore
from agent_app.storage.sqlite_assets import AssetRows
from agent_app.storage.sqlite_conversations import ConversationRows
from agent_app.storage.sqlite_database import DEFAULT_BUSY_TIMEOUT_MS, SqliteDatabase
from agent_app.storage.sqlite_projects import ProjectRows
from agent_app.storage.sqlite_runs import SqliteRunStore
from agent_app.storage.sqlite_transcript_edits import TranscriptEditRows
from agent_app.storage.transcription_rows import SqlTranscriptionStore

DB_FILE_NAME = "agent.sqlite3"


class SqliteStorage(ProjectRows, AssetRows, ConversationRows, TranscriptEditRows):
    """Projects, scenes, assets, conversations and messages in SQLite; media files in ``media_store`` (default:
    ``data_dir/media``).

    ``busy_timeout_ms`` is how long a write waits for another writer before failing with a
    :class:`StorageError`.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        media_store: MediaStore | None = None,
    ) -> None:
        self._data_dir = Path(data_dir)
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self._media_store = media_store or LocalMediaStore(self._data_dir)
        remove_stale_parts(self._media_store.staging_dir)  # a server killed mid-upload leaves its partial copy
        self._db = SqliteDatabase(self._data_dir / DB_FILE_NAME, busy_timeout_ms)

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        self._db.close()

    def schema_version(self) -> int:
        return self._db.schema_version()

    def transcription_store(self) -> SqlTranscriptionStore:
        """The page's transcription jobs, in this database."""
        return SqlTranscriptionStore(
            lambda: contextlib.nullcontext(self._db.connection()), self._db.write, "?", sqlite3.IntegrityError
        )

    def run_store(self) -> SqliteRunStore:
        """Runs and their events, in this database (see :mod:`agent_app.storage.sqlite_runs`)."""
        return SqliteRunStore(self._db)

    def accounts(self) -> SqliteAccountStore:
        """Sign-ins and API token hashes, in this database (see :mod:`agent_app.storage.accounts`)."""
        return SqliteAccountStore(self._db)

    def chat_persistence(self, conversation_id: str) -> ConversationPersistence:
        """The chat store hook that writes this conversation's messages as they are appended."""
        if self.get_conversation(conversation_id) is None:
            raise NotFoundError(CONVERSATION_GONE)
        return ConversationPersistence(self, conversation_id)
