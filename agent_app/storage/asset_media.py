"""An asset's bytes, by asset id, through the storage's media store: the part of
:class:`~agent_app.storage.base.Storage` both backends share (each supplies the SQL that finds the stored name).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from agent_app.media.transcript_cache import TranscriptStore
from agent_app.storage.media_store import MediaStore


class AssetMedia:
    """``media_file``, hashes, the player's URL and the transcript cache of assets, by id."""

    _media_store: MediaStore

    def _stored_name(self, asset_id: str) -> str | None:
        """The name the asset's file is kept under, ``None`` for no such asset (each backend's SQL)."""
        raise NotImplementedError

    @property
    def media_store(self) -> MediaStore:
        return self._media_store

    def media_file(self, asset_id: str) -> AbstractContextManager[Path | None]:
        """The asset's file on this machine for the ``with`` block (``None``: no such asset, or no file)."""
        stored_name = self._stored_name(asset_id)
        if stored_name is None:
            return contextlib.nullcontext(None)
        return self._media_store.local_file(stored_name)

    def has_media_file(self, asset_id: str) -> bool:
        stored_name = self._stored_name(asset_id)
        return stored_name is not None and self._media_store.has(stored_name)

    def known_hash(self, asset_id: str) -> str | None:
        stored_name = self._stored_name(asset_id)
        return self._media_store.known_hash(stored_name) if stored_name is not None else None

    def content_hash(self, asset_id: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        stored_name = self._stored_name(asset_id)
        return self._media_store.content_hash(stored_name, on_progress) if stored_name is not None else None

    def playback_url(self, asset_id: str, mime_type: str | None, route_url: str | None) -> str | None:
        """Where the browser's player reads the asset: the store decides (see :meth:`MediaStore.playback_url`)."""
        stored_name = self._stored_name(asset_id)
        return self._media_store.playback_url(stored_name, mime_type, route_url) if stored_name is not None else None

    def transcripts(self) -> TranscriptStore:
        return self._media_store.transcripts()
