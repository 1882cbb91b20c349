"""Persistence of projects, scenes, media assets, conversations and messages.

:func:`open_storage` gives the configured implementation (SQLite under the ``AGENT_DATA_DIR`` setting, or
PostgreSQL at ``AGENT_DATABASE_URL`` with media still under ``AGENT_DATA_DIR``); everything else depends only
on the :class:`Storage` interface.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agent_app.settings import Settings
from agent_app.storage.base import (
    AssetRejectedError,
    NotFoundError,
    Storage,
    StorageError,
)
from agent_app.storage.duplicates import find_same_file
from agent_app.storage.media_import import ALLOWED_EXTENSIONS
from agent_app.storage.media_library import ProjectMediaLibrary
from agent_app.storage.models import Conversation, Project, Scene
from agent_app.storage.postgres import PostgresStorage
from agent_app.storage.sqlite import SqliteStorage

_opened: dict[tuple[Path, int, str | None], Storage] = {}
_opened_lock = threading.Lock()


def open_storage(settings: Settings) -> Storage:
    """The storage the settings name: with ``AGENT_DATABASE_URL``, PostgreSQL there (media files under
    ``AGENT_DATA_DIR``); without, SQLite and media files under ``AGENT_DATA_DIR``. A write waits
    ``AGENT_DB_BUSY_TIMEOUT_MS`` for another writer before it fails. One instance per directory, timeout and
    database, shared by every page session and the media route. Raises
    :class:`~agent_app.settings.SettingsError` naming each setting whose value is unusable, and
    :class:`StorageError` when the database cannot be opened (it is tried again on the next call)."""
    settings.require("AGENT_DATA_DIR", "AGENT_DB_BUSY_TIMEOUT_MS", "AGENT_DATABASE_URL")
    key = (settings.data_dir.resolve(), settings.db_busy_timeout_ms, settings.database_url)
    with _opened_lock:
        storage = _opened.get(key)
        if storage is None:
            data_dir, busy_timeout_ms, url = key
            if url:
                storage = PostgresStorage(data_dir, url, busy_timeout_ms=busy_timeout_ms)
            else:
                storage = SqliteStorage(data_dir, busy_timeout_ms=busy_timeout_ms)
            _opened[key] = storage
        return storage


def close_opened_storages() -> None:
    """Forget every storage :func:`open_storage` gave, closing PostgreSQL's pools (their connections and
    reconnecting threads): at the end of a test, or of a process that opened one."""
    with _opened_lock:
        opened = list(_opened.values())
        _opened.clear()
    for storage in opened:
        storage.close()
        if isinstance(storage, PostgresStorage):
            storage.close_pool()


__all__ = [
    "ALLOWED_EXTENSIONS",
    "AssetRejectedError",
    "Conversation",
    "NotFoundError",
    "PostgresStorage",
    "Project",
    "ProjectMediaLibrary",
    "Scene",
    "SqliteStorage",
    "Storage",
    "StorageError",
    "close_opened_storages",
    "find_same_file",
    "open_storage",
]
