"""The default :class:`~agent_app.storage.base.Storage`: one SQLite file plus a media directory.

Layout under ``data_dir``: ``agent.sqlite3`` (WAL mode) and ``media/<generated id>.<ext>``.
Streamlit runs each session's script in its own thread, so every thread gets its own connection
(SQLite connections must not be shared across threads); WAL lets readers proceed while one writer
commits, and ``busy_timeout`` makes concurrent writers wait instead of failing.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel

from agent_app.storage.base import AssetRejectedError, NotFoundError, StorageError
from agent_app.storage.media_import import (
    copy_limited,
    extension_of,
    max_upload_bytes,
    mime_type_for,
    probe_media,
)
from agent_app.storage.models import Conversation, Project, Scene
from agent_app.storage.persistence import ConversationPersistence
from agent_app.storage.schema import MIGRATIONS, SCHEMA_VERSION
from agent_app.types import ChatMessage, MediaAsset, new_id, now_ms

RecordT = TypeVar("RecordT", bound=BaseModel)

DB_FILE_NAME = "agent.sqlite3"
MEDIA_DIR_NAME = "media"
MAX_NAME_LENGTH = 200
TITLE_LENGTH = 80
DEFAULT_BUSY_TIMEOUT_MS = 10_000


_INVISIBLE = re.compile("[\u0000-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
"""Control, zero-width and bidirectional-override characters: ``clip\u202egnp.mp4`` would *show* as
``clip4pm.png``; a name is shown as the characters it has."""


def clean_name(name: str, fallback: str) -> str:
    """A display name: invisible and direction-changing characters removed, whitespace collapsed,
    bounded length, ``fallback`` when blank."""
    collapsed = " ".join(_INVISIBLE.sub("", name).split())
    return collapsed[:MAX_NAME_LENGTH] or fallback


def _display_file_name(file_name: str) -> str:
    """The base name of an uploaded file, for display only (it never becomes a path)."""
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    return clean_name(base, "untitled")


def _title_from(content: str) -> str:
    collapsed = " ".join(content.split())
    return collapsed if len(collapsed) <= TITLE_LENGTH else collapsed[: TITLE_LENGTH - 1] + "…"


def _row_as(model: type[RecordT], row: sqlite3.Row) -> RecordT:
    """A row as ``model``: the columns are named like the model's fields, extra columns are ignored."""
    return model.model_validate(dict(row))


class SqliteStorage:
    """Projects, scenes, assets, conversations and messages in SQLite; media files on disk.

    ``max_upload_bytes`` defaults to the ``AGENT_MAX_UPLOAD_MB`` setting, read at each import.
    ``busy_timeout_ms`` is how long a write waits for another writer before failing with a
    :class:`StorageError`.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        max_upload_bytes: int | None = None,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        self._busy_timeout_ms = max(0, int(busy_timeout_ms))
        self._data_dir = Path(data_dir)
        self._media_dir = self._data_dir / MEDIA_DIR_NAME
        self._media_dir.mkdir(parents=True, exist_ok=True)
        self._db_path = self._data_dir / DB_FILE_NAME
        self._max_upload_bytes = max_upload_bytes
        self._local = threading.local()
        self._migrate()

    # --- connections and transactions -----------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self._db_path, isolation_level=None, timeout=self._busy_timeout_ms / 1000)
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            self._local.connection = connection
        return connection

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken eagerly (``BEGIN IMMEDIATE``) so two writers never deadlock.

        A database failure (locked past the busy timeout, disk full, read-only) becomes a
        :class:`StorageError` the page can show; the transaction is rolled back, nothing half-written.
        """
        connection = self._connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"The database could not be written ({exc})") from exc
        try:
            yield connection
        except BaseException as exc:
            if connection.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
                connection.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"The database could not be written ({exc})") from exc
            raise
        try:
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise StorageError(f"The database could not be written ({exc})") from exc

    def _migrate(self) -> None:
        with self._write() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StorageError(
                    f"The database {self._db_path} has schema version {version}, newer than this app "
                    f"understands ({SCHEMA_VERSION}); upgrade the app"
                )
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def schema_version(self) -> int:
        return int(self._connection().execute("PRAGMA user_version").fetchone()[0])

    # --- projects -------------------------------------------------------------------------------
    def create_project(self, name: str) -> Project:
        project = Project(id=new_id(), name=clean_name(name, "Untitled project"), created_at=now_ms())
        with self._write() as db:
            db.execute(
                "INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)",
                (project.id, project.name, project.created_at),
            )
        return project

    def get_project(self, project_id: str) -> Project | None:
        row = self._connection().execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
        return _row_as(Project, row) if row else None

    def list_projects(self) -> list[Project]:
        rows = self._connection().execute("SELECT * FROM projects ORDER BY created_at, id").fetchall()
        return [_row_as(Project, row) for row in rows]

    def rename_project(self, project_id: str, name: str) -> Project:
        with self._write() as db:
            cursor = db.execute(
                "UPDATE projects SET name = ? WHERE id = ?", (clean_name(name, "Untitled project"), project_id)
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"No project {project_id}")
        project = self.get_project(project_id)
        assert project is not None
        return project

    @staticmethod
    def _require_project(db: sqlite3.Connection, project_id: str) -> None:
        """Raise :class:`NotFoundError` unless the project exists (inside a write: checked in the transaction)."""
        if db.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
            raise NotFoundError(f"No project {project_id}")

    # --- scenes ---------------------------------------------------------------------------------
    def create_scene(self, project_id: str, name: str) -> Scene:
        with self._write() as db:
            self._require_project(db, project_id)
            position = int(
                db.execute(
                    "SELECT COALESCE(MAX(position), -1) + 1 FROM scenes WHERE project_id = ?", (project_id,)
                ).fetchone()[0]
            )
            scene = Scene(
                id=new_id(),
                project_id=project_id,
                name=clean_name(name, f"Scene {position + 1}"),
                position=position,
                created_at=now_ms(),
            )
            db.execute(
                "INSERT INTO scenes (id, project_id, name, position, created_at) VALUES (?, ?, ?, ?, ?)",
                (scene.id, scene.project_id, scene.name, scene.position, scene.created_at),
            )
        return scene

    def get_scene(self, scene_id: str) -> Scene | None:
        row = self._connection().execute("SELECT * FROM scenes WHERE id = ?", (scene_id,)).fetchone()
        return _row_as(Scene, row) if row else None

    def list_scenes(self, project_id: str) -> list[Scene]:
        rows = (
            self._connection()
            .execute("SELECT * FROM scenes WHERE project_id = ? ORDER BY position", (project_id,))
            .fetchall()
        )
        return [_row_as(Scene, row) for row in rows]

    def rename_scene(self, scene_id: str, name: str) -> Scene:
        scene = self.get_scene(scene_id)
        if scene is None:
            raise NotFoundError(f"No scene {scene_id}")
        new_name = clean_name(name, scene.name)
        with self._write() as db:
            db.execute("UPDATE scenes SET name = ? WHERE id = ?", (new_name, scene_id))
        return scene.model_copy(update={"name": new_name})

    # --- media ----------------------------------------------------------------------------------
    def import_asset(self, project_id: str, file_name: str, data: BinaryIO) -> MediaAsset:
        """Copy an upload into the media directory, probe it, and record it; all or nothing.

        Raises :class:`AssetRejectedError` (with a message for the user) for a file of the wrong
        type, too large, empty or unreadable as media; nothing is left on disk or in the database.
        """
        self._require_project(self._connection(), project_id)
        display_name = _display_file_name(file_name)
        extension = extension_of(display_name)
        limit = self._max_upload_bytes if self._max_upload_bytes is not None else max_upload_bytes()
        asset_id = new_id()
        stored_name = f"{asset_id}.{extension}"
        partial = self._media_dir / f"{stored_name}.part"
        final = self._media_dir / stored_name
        size = copy_limited(data, partial, limit, display_name)
        try:
            probed = probe_media(partial, display_name)
            partial.replace(final)
            asset = MediaAsset(
                id=asset_id,
                name=display_name,
                kind=probed.kind,
                duration_ms=probed.duration_ms,
                size_bytes=size,
                mime_type=mime_type_for(extension, probed.kind),
            )
            with self._write() as db:
                db.execute(
                    "INSERT INTO assets (id, project_id, name, kind, duration_ms, size_bytes, mime_type, file_name,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        asset.id,
                        project_id,
                        asset.name,
                        asset.kind,
                        asset.duration_ms,
                        asset.size_bytes,
                        asset.mime_type,
                        stored_name,
                        now_ms(),
                    ),
                )
        except BaseException:
            partial.unlink(missing_ok=True)
            final.unlink(missing_ok=True)
            raise
        return asset

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        row = self._connection().execute("SELECT * FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return _row_as(MediaAsset, row) if row else None

    def asset_project_id(self, asset_id: str) -> str | None:
        row = self._connection().execute("SELECT project_id FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return str(row["project_id"]) if row else None

    def media_path(self, asset_id: str) -> Path | None:
        row = self._connection().execute("SELECT file_name FROM assets WHERE id = ?", (asset_id,)).fetchone()
        if row is None:
            return None
        path = self._media_dir / str(row["file_name"])
        return path if path.is_file() else None

    def list_assets(self, project_id: str) -> list[MediaAsset]:
        rows = (
            self._connection()
            .execute("SELECT * FROM assets WHERE project_id = ? ORDER BY created_at, id", (project_id,))
            .fetchall()
        )
        return [_row_as(MediaAsset, row) for row in rows]

    def remove_asset(self, asset_id: str) -> None:
        """Forget the asset and delete its file (the row first: a leftover file is harmless)."""
        with self._write() as db:
            row = db.execute("SELECT file_name FROM assets WHERE id = ?", (asset_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"No asset {asset_id}")
            db.execute("DELETE FROM assets WHERE id = ?", (asset_id,))
        (self._media_dir / str(row["file_name"])).unlink(missing_ok=True)

    # --- conversations --------------------------------------------------------------------------
    _CONVERSATION_COLUMNS = (
        "c.id, c.project_id, c.title, c.created_at, c.updated_at,"
        " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count"
    )

    @staticmethod
    def _activity_time(db: sqlite3.Connection, project_id: str) -> int:
        """Now, but strictly after the project's latest activity: "most recent first" needs no tie-break."""
        latest = db.execute("SELECT MAX(updated_at) FROM conversations WHERE project_id = ?", (project_id,)).fetchone()[
            0
        ]
        return max(now_ms(), int(latest) + 1) if latest is not None else now_ms()

    def create_conversation(self, project_id: str, title: str = "") -> Conversation:
        with self._write() as db:
            self._require_project(db, project_id)
            now = self._activity_time(db, project_id)
            conversation = Conversation(
                id=new_id(), project_id=project_id, title=_title_from(title), created_at=now, updated_at=now
            )
            db.execute(
                "INSERT INTO conversations (id, project_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (conversation.id, project_id, conversation.title, now, now),
            )
        return conversation

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = (
            self._connection()
            .execute(f"SELECT {self._CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?", (conversation_id,))
            .fetchone()
        )
        return _row_as(Conversation, row) if row else None

    def list_conversations(self, project_id: str) -> list[Conversation]:
        """The project's conversations, most recently active first."""
        rows = (
            self._connection()
            .execute(
                f"SELECT {self._CONVERSATION_COLUMNS} FROM conversations c WHERE c.project_id = ?"
                " ORDER BY c.updated_at DESC, c.created_at DESC, c.id",
                (project_id,),
            )
            .fetchall()
        )
        return [_row_as(Conversation, row) for row in rows]

    def append_message(self, conversation_id: str, message: ChatMessage) -> None:
        """Store ``message`` (its camelCase JSON) at the end of the conversation.

        Appending a message id that is already stored replaces its body in place, so a retried
        write never duplicates a message. The first user message becomes the conversation's title.
        """
        body = message.model_dump_json(by_alias=True, exclude_none=True)
        with self._write() as db:
            row = db.execute("SELECT project_id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"No conversation {conversation_id}")
            now = self._activity_time(db, str(row["project_id"]))
            db.execute(
                "INSERT INTO messages (id, conversation_id, role, body, created_at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (conversation_id, id) DO UPDATE SET body = excluded.body, role = excluded.role",
                (message.id, conversation_id, message.role, body, now),
            )
            title = _title_from(message.content) if message.role == "user" else ""
            db.execute(
                "UPDATE conversations SET updated_at = ?,"
                " title = CASE WHEN title = '' AND ? <> '' THEN ? ELSE title END WHERE id = ?",
                (now, title, title, conversation_id),
            )

    def load_messages(self, conversation_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        """The conversation's messages in order; with ``limit``, only the last ``limit`` of them."""
        db = self._connection()
        if limit is None:
            rows = db.execute(
                "SELECT body FROM messages WHERE conversation_id = ? ORDER BY seq", (conversation_id,)
            ).fetchall()
        else:
            rows = db.execute(
                "SELECT body FROM (SELECT seq, body FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?)"
                " ORDER BY seq",
                (conversation_id, max(limit, 0)),
            ).fetchall()
        return [ChatMessage.model_validate_json(row["body"]) for row in rows]

    def count_messages(self, conversation_id: str) -> int:
        row = (
            self._connection()
            .execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,))
            .fetchone()
        )
        return int(row[0])

    def clear_messages(self, conversation_id: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))
            db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now_ms(), conversation_id))

    def chat_persistence(self, conversation_id: str) -> ConversationPersistence:
        """The chat store hook that writes this conversation's messages as they are appended."""
        if self.get_conversation(conversation_id) is None:
            raise NotFoundError(f"No conversation {conversation_id}")
        return ConversationPersistence(self, conversation_id)


__all__ = ["AssetRejectedError", "SqliteStorage"]
