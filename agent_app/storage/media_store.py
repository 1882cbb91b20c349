"""Where the bytes of media assets and the transcript cache live: the :class:`MediaStore` interface, and its
local-disk implementation (``data_dir/media`` and ``data_dir/transcripts.sqlite3``, as before object storage).

The database holds an asset's row; a media store holds its file under the asset's generated stored name.
Both backends of :class:`~agent_app.storage.base.Storage` take one, so SQLite or PostgreSQL go with the local
disk or an S3 bucket (:class:`~agent_app.storage.s3_media_store.S3MediaStore`) alike.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_app.media.transcript_cache import TranscriptCache, TranscriptStore

MEDIA_DIR_NAME = "media"


@runtime_checkable
class MediaStore(Protocol):
    """The files of media assets, by stored name, and the transcript cache."""

    @property
    def staging_dir(self) -> Path:
        """A local folder where an upload is copied and proved to be media before :meth:`save` keeps it."""
        ...

    def save(self, stored_name: str, proved: Path, sha256: str) -> None:
        """Keep the proved file ``proved`` (of SHA-256 ``sha256``) as ``stored_name``, taking it over: all or
        nothing. Raises :class:`~agent_app.storage.base.StorageError` when the store refuses it."""
        ...

    def delete(self, stored_name: str) -> None:
        """Forget the file (nothing happens when there is none)."""
        ...

    def has(self, stored_name: str) -> bool: ...

    def local_file(self, stored_name: str) -> AbstractContextManager[Path | None]:
        """The file on this machine's disk for the ``with`` block (``None`` when the store has none)."""
        ...

    def known_hash(self, stored_name: str) -> str | None:
        """The file's SHA-256 when known without reading it (for the page's cheap checks)."""
        ...

    def content_hash(self, stored_name: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        """The file's SHA-256, read (and remembered) when not known yet; ``None`` when there is no file."""
        ...

    def playback_url(self, stored_name: str, mime_type: str | None, route_url: str | None) -> str | None:
        """The address the browser's player reads the file from: ``route_url`` (this server's media route)
        for a store the server reads itself, or the store's own (a presigned URL); ``None``: none to give."""
        ...

    def transcripts(self) -> TranscriptStore: ...


class LocalMediaStore:
    """Files in ``data_dir/media``, the transcript cache in ``data_dir``: one machine's disk."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = Path(data_dir)
        self._media_dir = self._data_dir / MEDIA_DIR_NAME
        self._media_dir.mkdir(parents=True, exist_ok=True)

    @property
    def staging_dir(self) -> Path:
        return self._media_dir  # the same folder: keeping a proved upload is a rename

    def _path(self, stored_name: str) -> Path:
        return self._media_dir / stored_name

    def save(self, stored_name: str, proved: Path, sha256: str) -> None:
        target = self._path(stored_name)
        os.replace(proved, target)
        with contextlib.suppress(OSError):  # a memo only: the hash is read again if this fails
            self.transcripts().remember_hash(target, sha256)

    def delete(self, stored_name: str) -> None:
        self._path(stored_name).unlink(missing_ok=True)

    def has(self, stored_name: str) -> bool:
        return self._path(stored_name).is_file()

    @contextlib.contextmanager
    def _existing(self, stored_name: str) -> Iterator[Path | None]:
        path = self._path(stored_name)
        yield path if path.is_file() else None

    def local_file(self, stored_name: str) -> AbstractContextManager[Path | None]:
        return self._existing(stored_name)

    def known_hash(self, stored_name: str) -> str | None:
        return self.transcripts().cached_hash(self._path(stored_name))

    def content_hash(self, stored_name: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        path = self._path(stored_name)
        return self.transcripts().content_hash(path, on_progress) if path.is_file() else None

    def playback_url(self, stored_name: str, mime_type: str | None, route_url: str | None) -> str | None:
        return route_url

    def transcripts(self) -> TranscriptCache:
        return TranscriptCache(self._data_dir)
