"""Test data for the creator's page tests: a clip in a project with a generated one-hour transcript already
in the transcript cache (no transcription run), and many assets for library tests."""

from __future__ import annotations

from pathlib import Path

from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.storage import SqliteStorage
from agent_app.types import MediaAsset
from tests.media_samples import make_video
from tests.storage_backends import stored_path

EXACT_START_MS = 8146
"""The third segment starts here: a seek must land on 8.146 s, not 8.0 s."""
EXACT_PHRASE = "the lighthouse keeper lit the lamp"
LATE_PHRASE = "nets drying on the northern quay"
LATE_INDEX = 731
"""A segment 48 minutes in, far past the first page."""


def hour_transcript(segments: int = 900, duration_ms: int = 3_600_000) -> Transcript:
    """``segments`` evenly spread over ``duration_ms``, each with its own words; two known phrases."""
    step = duration_ms // segments
    parts = []
    for index in range(segments):
        start = EXACT_START_MS if index == 2 else index * step
        text = f"Segment {index}: the boats come in at dawn and the crew unloads the catch number {index}."
        if index == 2:
            text = f"And then {EXACT_PHRASE}, just after eight."
        if index == LATE_INDEX:
            text = f"Later we filmed {LATE_PHRASE} for the closing shot."
        parts.append(TranscriptSegment(start_ms=start, end_ms=start + step - 200, text=text))
    return Transcript(duration_ms=duration_ms, language="en", segments=parts, backend="local", model="test")


def seed_clip(data_dir: Path, work_dir: Path, transcript: Transcript, seconds: float = 12.0) -> tuple[str, MediaAsset]:
    """A project holding one short video whose cached transcript is ``transcript``: (project id, asset)."""
    clip = make_video(work_dir / "harbour.mp4", seconds=seconds)
    storage = SqliteStorage(data_dir)
    try:
        project = storage.create_project("Harbour")
        with clip.open("rb") as handle:
            asset = storage.import_asset(project.id, "harbour.mp4", handle)
        path = stored_path(storage, asset.id)
        assert path is not None
        cache = TranscriptCache(data_dir)
        cache.put(CacheKey(cache.content_hash(path), transcript.backend, transcript.model), transcript, asset.id)
    finally:
        storage.close()
    return project.id, asset
