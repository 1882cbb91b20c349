"""The SHA-256 of a file's bytes: the identity of a media file, for the duplicate check and the transcript cache."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import BinaryIO

_BLOCK = 1 << 20
"""Read in 1 MB blocks: an hour of video is never held in memory."""


def sha256_of(data: BinaryIO, on_progress: Callable[[float], None] | None = None) -> str:
    """The hex SHA-256 of all of ``data`` from its start; its read position is restored afterwards.
    ``on_progress`` gets the fraction hashed after each block (it needs a seekable ``data`` to know the size)."""
    position = data.tell()
    size = max(1, data.seek(0, 2))
    data.seek(0)
    digest = hashlib.sha256()
    done = 0
    try:
        while block := data.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if on_progress is not None:
                on_progress(min(1.0, done / size))
        return digest.hexdigest()
    finally:
        data.seek(position)
