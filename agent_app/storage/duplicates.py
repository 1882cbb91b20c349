"""Recognising an upload the project already has (the same bytes), so it is not stored twice.

Dropping the same clip twice would otherwise list two identical entries that the assistant and
the user must tell apart by id. Only assets of exactly the upload's size are compared, by the hash kept
since their upload, so an upload of a new file costs no reading of the library.
"""

from __future__ import annotations

from typing import BinaryIO

from agent_app.file_hash import sha256_of
from agent_app.storage.base import Storage
from agent_app.types import MediaAsset


def find_same_file(storage: Storage, project_id: str, data: BinaryIO, size_bytes: int) -> MediaAsset | None:
    """The project's asset whose file has exactly the bytes of ``data`` (``size_bytes`` long), if any."""
    candidates = [asset for asset in storage.list_assets(project_id) if asset.size_bytes == size_bytes]
    if not candidates:
        return None
    wanted = sha256_of(data)
    for asset in candidates:
        if storage.content_hash(asset.id) == wanted:  # known since upload, or read once and remembered
            return asset
    return None
