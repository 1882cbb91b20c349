"""A :class:`~agent_app.types.MediaLibrary` limited to one project's assets.

Tools receive this rather than the whole storage, so an asset id the model invents or copies from
another project resolves to nothing instead of to someone else's file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_app.storage.base import Storage
from agent_app.types import MediaAsset


@dataclass(frozen=True)
class ProjectMediaLibrary:
    """The media of ``project_id`` in ``storage``."""

    storage: Storage
    project_id: str

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        if self.storage.asset_project_id(asset_id) != self.project_id:
            return None
        return self.storage.get_asset(asset_id)

    def media_path(self, asset_id: str) -> Path | None:
        if self.storage.asset_project_id(asset_id) != self.project_id:
            return None
        return self.storage.media_path(asset_id)
