"""Persistence of projects, scenes, media assets, conversations and messages.

:func:`open_storage` gives the configured implementation (SQLite under the ``AGENT_DATA_DIR`` setting, or
PostgreSQL at ``AGENT_DATABASE_URL``), with media in a :class:`MediaStore` (``AGENT_MEDIA_STORE``'s bucket, or
``AGENT_DATA_DIR``); everything else depends only on the :class:`Storage` interface.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agent_app.settings import Settings
from agent_app.storage.base import (
    CONVERSATION_GONE,
    AssetRejectedError,
    NotFoundError,
    Storage,
    StorageError,
)
from agent_app.storage.duplicates import find_same_file
from agent_app.storage.media_import import ALLOWED_EXTENSIONS
from agent_app.storage.media_library import ProjectMediaLibrary
from agent_app.storage.media_store import LocalMediaStore, MediaStore
from agent_app.storage.models import LOCAL_OWNER, ApiToken, Conversation, Owner, Project, Scene
from agent_app.storage.owned import OwnedStorage
from agent_app.storage.postgres import PostgresStorage
from agent_app.storage.s3_media_store import S3Location, S3MediaStore, parse_store_url
from agent_app.storage.sqlite import SqliteStorage

_StorageKey = tuple[Path, int, str | None, str | None, str | None, int]
_opened: dict[_StorageKey, Storage] = {}
_opened_lock = threading.Lock()
STAGING_DIR_NAME = "staging"
"""Under ``AGENT_DATA_DIR`` with an object store: where uploads are proved to be media and transcriptions read
their temporary downloads."""


def open_media_store(settings: Settings, data_dir: Path) -> MediaStore:
    """The media store the settings name: the bucket of ``AGENT_MEDIA_STORE`` (at ``AGENT_S3_ENDPOINT_URL``
    when set), else the local disk under ``data_dir``."""
    if settings.media_store:
        return S3MediaStore(
            parse_store_url(settings.media_store),
            data_dir / STAGING_DIR_NAME,
            endpoint_url=settings.s3_endpoint_url,
            url_seconds=settings.media_url_seconds,
        )
    return LocalMediaStore(data_dir)


def open_storage(settings: Settings) -> Storage:
    """The storage the settings name: with ``AGENT_DATABASE_URL``, PostgreSQL there; without, SQLite under
    ``AGENT_DATA_DIR``; media files and the transcript cache in ``AGENT_MEDIA_STORE``'s bucket, else under
    ``AGENT_DATA_DIR``. A write waits ``AGENT_DB_BUSY_TIMEOUT_MS`` for another writer before it fails. One
    instance per directory, timeout, database and media store, shared by every page session and the media
    route. Raises :class:`~agent_app.settings.SettingsError` naming each setting whose value is unusable, and
    :class:`StorageError` when the database cannot be opened (it is tried again on the next call)."""
    settings.require(
        "AGENT_DATA_DIR",
        "AGENT_DB_BUSY_TIMEOUT_MS",
        "AGENT_DATABASE_URL",
        "AGENT_MEDIA_STORE",
        "AGENT_S3_ENDPOINT_URL",
        "AGENT_MEDIA_URL_SECONDS",
    )
    key: _StorageKey = (
        settings.data_dir.resolve(),
        settings.db_busy_timeout_ms,
        settings.database_url,
        settings.media_store,
        settings.s3_endpoint_url,
        settings.media_url_seconds,
    )
    with _opened_lock:
        storage = _opened.get(key)
        if storage is None:
            data_dir, busy_timeout_ms, url = key[:3]
            media_store = open_media_store(settings, data_dir)
            if url:
                storage = PostgresStorage(data_dir, url, busy_timeout_ms=busy_timeout_ms, media_store=media_store)
            else:
                storage = SqliteStorage(data_dir, busy_timeout_ms=busy_timeout_ms, media_store=media_store)
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
    "CONVERSATION_GONE",
    "LOCAL_OWNER",
    "ApiToken",
    "AssetRejectedError",
    "Conversation",
    "LocalMediaStore",
    "MediaStore",
    "NotFoundError",
    "OwnedStorage",
    "Owner",
    "PostgresStorage",
    "Project",
    "ProjectMediaLibrary",
    "S3Location",
    "S3MediaStore",
    "Scene",
    "SqliteStorage",
    "Storage",
    "StorageError",
    "close_opened_storages",
    "find_same_file",
    "open_media_store",
    "open_storage",
]
