"""Transcripts cached by content (the media's SHA-256) and how they were made (backend, model, language,
range), in SQLite, so asking again is instant and survives restarts.

Keyed by content, not asset id: the same file uploaded twice is transcribed once, and a replaced file is
never answered with a stale transcript. Digests are memoized by (path, size, mtime): hashing a large video
takes seconds. Its own database file, so it evolves apart from the page's schema.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent_app.file_hash import sha256_of
from agent_app.media.transcript_types import Transcript

if TYPE_CHECKING:
    from agent_app.types import MediaLibrary

DB_FILENAME = "transcripts.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transcripts (
    content_hash TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    language TEXT NOT NULL,
    start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL,
    asset_id TEXT,
    transcript_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (content_hash, backend, model, language, start_ms, end_ms)
);
CREATE INDEX IF NOT EXISTS transcripts_by_hash ON transcripts (content_hash, start_ms, end_ms, created_at);
CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
"""

_FULL_END = -1
"""``end_ms`` stored for "to the end" (SQLite primary keys and NULL do not mix well)."""

_initialized: set[Path] = set()
_init_lock = threading.Lock()


@dataclass(frozen=True)
class CacheKey:
    """What makes two transcriptions the same: content and parameters. ``language`` ``None`` = auto."""

    content_hash: str
    backend: str
    model: str
    language: str | None = None
    start_ms: int = 0
    end_ms: int | None = None

    @property
    def is_full(self) -> bool:
        return self.start_ms == 0 and self.end_ms is None

    def full(self) -> CacheKey:
        return CacheKey(self.content_hash, self.backend, self.model, self.language)

    def _row(self) -> tuple[str, str, str, str, int, int]:
        end = _FULL_END if self.end_ms is None else self.end_ms
        return (self.content_hash, self.backend, self.model, (self.language or "").lower(), self.start_ms, end)


class TranscriptStore(Protocol):
    """Transcripts by :class:`CacheKey`: this SQLite cache on the local disk, or objects in the media's
    bucket (:class:`~agent_app.storage.s3_transcripts.S3Transcripts`)."""

    def get(self, key: CacheKey) -> Transcript | None: ...

    def put(self, key: CacheKey, transcript: Transcript, asset_id: str | None = None) -> None: ...

    def latest_full(self, content_hash: str) -> Transcript | None: ...


class TranscriptCache:
    """The transcript store of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / DB_FILENAME
        with _init_lock:
            if self.path not in _initialized:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self._connect() as db:
                    db.execute("PRAGMA journal_mode=WAL")
                    db.executescript(_SCHEMA)
                _initialized.add(self.path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30)) as db, db:
            yield db

    def content_hash(self, path: Path, on_progress: Callable[[float], None] | None = None) -> str:
        """``path``'s SHA-256, from the memo when its size and modification time are unchanged."""
        stat = path.stat()
        key = str(path.resolve())
        memo = self._memo(key, stat)
        if memo is not None:
            return memo
        with path.open("rb") as handle:
            digest = sha256_of(handle, on_progress)
        self._memoize(key, stat, digest)
        return digest

    def remember_hash(self, path: Path, digest: str) -> None:
        """Record ``path``'s SHA-256, computed while it was written (an upload), so it is never read for it."""
        self._memoize(str(path.resolve()), path.stat(), digest)

    def _memoize(self, key: str, stat: os.stat_result, digest: str) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)",
                (key, stat.st_size, stat.st_mtime_ns, digest),
            )

    def cached_hash(self, path: Path) -> str | None:
        """The memoized hash of ``path`` if still valid, without reading the file (for cheap page checks)."""
        try:
            stat = path.stat()
        except OSError:
            return None
        return self._memo(str(path.resolve()), stat)

    def _memo(self, key: str, stat: os.stat_result) -> str | None:
        """The hash recorded for ``key`` when the file still has the size and modification time it had then."""
        with self._connect() as db:
            row = db.execute(
                "SELECT sha256 FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                (key, stat.st_size, stat.st_mtime_ns),
            ).fetchone()
        return str(row[0]) if row else None

    def get(self, key: CacheKey) -> Transcript | None:
        """The transcript for exactly ``key``; else, for a range, the slice of a cached full transcript."""
        transcript = self._get_exact(key)
        if transcript is not None or key.is_full:
            return transcript
        full = self._get_exact(key.full())
        return slice_transcript(full, key.start_ms, key.end_ms) if full is not None else None

    def _get_exact(self, key: CacheKey) -> Transcript | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT transcript_json FROM transcripts WHERE content_hash = ? AND backend = ? AND model = ? "
                "AND language = ? AND start_ms = ? AND end_ms = ?",
                key._row(),
            ).fetchone()
        return Transcript.model_validate_json(row[0]) if row else None

    def put(self, key: CacheKey, transcript: Transcript, asset_id: str | None = None) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO transcripts (content_hash, backend, model, language, start_ms, end_ms, "
                "asset_id, transcript_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key._row(), asset_id, transcript.model_dump_json(by_alias=True), time.time()),
            )

    def latest_full(self, content_hash: str) -> Transcript | None:
        """The newest whole-media transcript of this content, whatever backend made it (for the page)."""
        with self._connect() as db:
            row = db.execute(
                "SELECT transcript_json FROM transcripts WHERE content_hash = ? AND start_ms = 0 AND end_ms = ? "
                "ORDER BY created_at DESC LIMIT 1",
                (content_hash, _FULL_END),
            ).fetchone()
        return Transcript.model_validate_json(row[0]) if row else None


def slice_transcript(transcript: Transcript, start_ms: int, end_ms: int | None) -> Transcript:
    """The part of ``transcript`` whose segments overlap ``[start_ms, end_ms)``."""
    stop = end_ms if end_ms is not None else transcript.duration_ms
    segments = [s for s in transcript.segments if s.end_ms > start_ms and s.start_ms < stop]
    return transcript.model_copy(update={"segments": segments, "start_ms": start_ms, "end_ms": end_ms})


def saved_transcript(media: MediaLibrary, asset_id: str) -> Transcript | None:
    """The asset's cached whole-media transcript, or ``None``. Cheap and never hashes a file: an asset whose
    file was never hashed (never transcribed, uploaded before hashes were kept) has no known hash, so none."""
    from agent_app.media.speaker_turns import with_speakers  # it builds on this module

    digest = media.known_hash(asset_id)
    if digest is None:
        return None
    store = media.transcripts()
    transcript = store.latest_full(digest)
    return with_speakers(store, digest, transcript) if transcript is not None else None
