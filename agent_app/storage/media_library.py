"""A :class:`~agent_app.types.MediaLibrary` limited to one project's assets.

Tools receive this rather than the whole storage, so an asset id the model invents or copies from
another project resolves to nothing instead of to someone else's file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from agent_app.media.transcript_cache import TranscriptStore
from agent_app.storage.base import NotFoundError, Storage
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits
from agent_app.types import MediaAsset


@dataclass(frozen=True)
class ProjectMediaLibrary:
    """The media of ``project_id`` in ``storage``."""

    storage: Storage
    project_id: str

    def _mine(self, asset_id: str) -> bool:
        return self.storage.asset_project_id(asset_id) == self.project_id

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        return self.storage.get_asset(asset_id) if self._mine(asset_id) else None

    def media_file(self, asset_id: str) -> AbstractContextManager[Path | None]:
        return self.storage.media_file(asset_id) if self._mine(asset_id) else contextlib.nullcontext(None)

    def known_hash(self, asset_id: str) -> str | None:
        return self.storage.known_hash(asset_id) if self._mine(asset_id) else None

    def content_hash(self, asset_id: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        return self.storage.content_hash(asset_id, on_progress) if self._mine(asset_id) else None

    def transcripts(self) -> TranscriptStore:
        return self.storage.transcripts()

    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        return self.storage.transcript_edits(asset_id) if self._mine(asset_id) else TranscriptEdits()

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None:
        self._require(asset_id)
        self.storage.save_correction(asset_id, correction)

    def remove_correction(self, asset_id: str, start_ms: int) -> None:
        self._require(asset_id)
        self.storage.remove_correction(asset_id, start_ms)

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None:
        self._require(asset_id)
        self.storage.name_speaker(asset_id, speaker, name)

    def _require(self, asset_id: str) -> None:
        """Edits go only to this project's assets."""
        if not self._mine(asset_id):
            raise NotFoundError(f"No asset {asset_id} in this project")
