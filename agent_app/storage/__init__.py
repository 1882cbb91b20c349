"""Persistence of projects, scenes, media assets, conversations and messages.

:func:`open_storage` gives the configured implementation (SQLite under the ``AGENT_DATA_DIR``
setting); everything else depends only on the :class:`Storage` interface.
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
from agent_app.storage.sqlite import SqliteStorage

_opened: dict[tuple[Path, int], SqliteStorage] = {}
_opened_lock = threading.Lock()


def open_storage(settings: Settings) -> SqliteStorage:
    """The storage the settings name: SQLite and media files under ``AGENT_DATA_DIR``, where a write waits
    ``AGENT_DB_BUSY_TIMEOUT_MS`` for another writer before it fails. One instance per directory and
    timeout, shared by every page session and the media route (it opens a connection per thread).
    Raises :class:`~agent_app.settings.SettingsError` naming either setting when its value is unusable."""
    settings.require("AGENT_DATA_DIR", "AGENT_DB_BUSY_TIMEOUT_MS")
    key = (settings.data_dir.resolve(), settings.db_busy_timeout_ms)
    with _opened_lock:
        storage = _opened.get(key)
        if storage is None:
            storage = _opened[key] = SqliteStorage(key[0], busy_timeout_ms=key[1])
        return storage


__all__ = [
    "ALLOWED_EXTENSIONS",
    "AssetRejectedError",
    "Conversation",
    "NotFoundError",
    "Project",
    "ProjectMediaLibrary",
    "Scene",
    "SqliteStorage",
    "Storage",
    "StorageError",
    "find_same_file",
    "open_storage",
]
