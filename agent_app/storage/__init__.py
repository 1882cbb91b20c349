"""Persistence of projects, scenes, media assets, conversations and messages.

:func:`open_storage` gives the configured implementation (SQLite under ``AGENT_DATA_DIR``,
default ``./data``); everything else depends only on the :class:`Storage` interface.
"""

from __future__ import annotations

from pathlib import Path

from agent_app.settings import read_int, read_str
from agent_app.storage.base import (
    AssetRejectedError,
    NotFoundError,
    Storage,
    StorageError,
)
from agent_app.storage.duplicates import find_same_file
from agent_app.storage.media_import import ALLOWED_EXTENSIONS, MIME_BY_EXTENSION, NOT_SUPPORTED, max_upload_bytes
from agent_app.storage.media_library import ProjectMediaLibrary
from agent_app.storage.models import Conversation, Project, Scene
from agent_app.storage.persistence import ConversationPersistence
from agent_app.storage.sqlite import SqliteStorage
from agent_app.storage.sqlite_database import DEFAULT_BUSY_TIMEOUT_MS

DEFAULT_DATA_DIR = "data"


def data_dir_setting() -> Path:
    """The ``AGENT_DATA_DIR`` setting (default ``./data``, relative to the working directory)."""
    return Path(read_str("AGENT_DATA_DIR", DEFAULT_DATA_DIR) or DEFAULT_DATA_DIR)


def open_storage(data_dir: Path | None = None) -> SqliteStorage:
    """The default storage: SQLite and media files under ``data_dir`` (or ``AGENT_DATA_DIR``); a write
    waits ``AGENT_DB_BUSY_TIMEOUT_MS`` (default 10 s) for another writer before it fails."""
    return SqliteStorage(
        data_dir if data_dir is not None else data_dir_setting(),
        busy_timeout_ms=read_int("AGENT_DB_BUSY_TIMEOUT_MS", DEFAULT_BUSY_TIMEOUT_MS),
    )


__all__ = [
    "ALLOWED_EXTENSIONS",
    "MIME_BY_EXTENSION",
    "NOT_SUPPORTED",
    "AssetRejectedError",
    "Conversation",
    "ConversationPersistence",
    "NotFoundError",
    "Project",
    "ProjectMediaLibrary",
    "Scene",
    "SqliteStorage",
    "Storage",
    "StorageError",
    "data_dir_setting",
    "find_same_file",
    "max_upload_bytes",
    "open_storage",
]
