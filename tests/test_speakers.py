"""Speakers found offline by Moonshine's diarization on a two-voice clip the test makes (espeak-ng: a low male
and a high female voice taking turns), kept in the transcript cache and labelled onto the transcript's
segments; Stop ends it at once. Diarization is the heaviest media work in the suite, so the turns are short: two
a voice, a sentence or two each."""

from __future__ import annotations

import io
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from agent_app.media import find_speakers, saved_transcript
from agent_app.media.speaker_turns import speaker_turns
from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.storage import ProjectMediaLibrary, SqliteStorage
from agent_app.types import Cancellation, StopRequested, ToolEnvironment
from tests.storage_backends import stored_path
from testsupport.media_factory import MediaFile, espeak_available, resample_linear

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not espeak_available(), reason="needs Debian's espeak-ng")]

RATE = 16_000
VOICES = {"low": ("en-us+m1", 15), "high": ("en-gb+f4", 95)}
TURNS = [
    ("low", "Welcome to the harbour. Today we talk about boats."),
    ("high", "Thank you. I have sailed this coast for twenty years."),
    ("low", "What was the hardest storm you ever saw out there?"),
    ("high", "The winter of the big flood. The waves were huge."),
]


def _voice(text: str, voice: str, pitch: int) -> np.ndarray:
    spoken = subprocess.run(
        ["espeak-ng", "-v", voice, "-p", str(pitch), "-s", "150", "--stdout", text],
        check=True, capture_output=True, timeout=60,
    ).stdout  # fmt: skip
    with wave.open(io.BytesIO(spoken)) as wav:
        rate, raw = wav.getframerate(), wav.readframes(wav.getnframes())
    return resample_linear(np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0, rate, RATE)


def _interview(path: Path) -> list[TranscriptSegment]:
    """The two voices' turns, half a second apart, as an M4A; their segments (who said what, when)."""
    pieces, segments, at = [], [], 0
    for who, text in TURNS:
        samples = _voice(text, *VOICES[who])
        start = at * 1000 // RATE
        segments.append(TranscriptSegment(start_ms=start, end_ms=start + len(samples) * 1000 // RATE, text=text))
        pieces += [samples, np.zeros(RATE // 2, dtype=np.float32)]
        at += len(samples) + RATE // 2
    MediaFile(np.concatenate(pieces), RATE, codec="aac").write(path)
    return segments


def test_a_two_voice_clip_is_labelled_with_two_speakers(tmp_path: Path) -> None:
    segments = _interview(tmp_path / "interview.m4a")
    storage = SqliteStorage(tmp_path / "data")
    project = storage.create_project("Harbour")
    with (tmp_path / "interview.m4a").open("rb") as handle:
        asset = storage.import_asset(project.id, "interview.m4a", handle)
    media = ProjectMediaLibrary(storage, project.id)
    path = stored_path(media, asset.id)
    assert path is not None
    cache = TranscriptCache(tmp_path / "data")
    made = Transcript(duration_ms=segments[-1].end_ms, segments=segments, backend="local", model="test")
    cache.put(CacheKey(cache.content_hash(path), made.backend, made.model), made, asset.id)

    stopped = Cancellation()
    stopped.set()
    with pytest.raises(StopRequested):  # Stop before it starts: nothing found, nothing kept
        find_speakers(ToolEnvironment(media=media, data_dir=tmp_path / "data", cancellation=stopped), asset)
    assert speaker_turns(media.transcripts(), cache.content_hash(path)) is None

    reports: list[float] = []
    turns = find_speakers(
        ToolEnvironment(media=media, data_dir=tmp_path / "data", report_progress=lambda f, _: reports.append(f)), asset
    )
    assert {turn.speaker for turn in turns} == {"S1", "S2"}
    assert reports == sorted(reports) and reports[-1] == 1.0 and len(reports) > 3  # progress as it goes
    labelled = saved_transcript(media, asset.id)
    assert labelled is not None
    assert [segment.speaker for segment in labelled.segments] == ["S1", "S2", "S1", "S2"]
    storage.close()
