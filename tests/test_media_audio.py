"""Audio extraction (PyAV), chunking and upload encoding, on media generated at test time."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agent_app.media.audio import AudioSource
from agent_app.media.chunking import FloatArray, rechunk
from agent_app.media.encode import encode_ogg_opus, encoded_chunks
from agent_app.media.media_errors import NoAudioStreamError, TruncatedMediaError, UnreadableMediaError
from agent_app.media.sample_placement import SAMPLE_RATE
from testsupport.decoded_audio import extract_audio
from testsupport.media_factory import Video, mp4, not_media, silent_mp4, tone_track, truncated_copy, write_mp4

TOLERANCE_MS = 50


def split_points(samples: FloatArray, sample_rate: int, max_chunk_s: float, search_s: float) -> list[tuple[int, int]]:
    """``[(begin, end), ...]`` sample ranges covering in-memory ``samples``, as ``rechunk`` cuts them."""
    return [(begin, begin + len(piece)) for begin, piece in rechunk([samples], sample_rate, max_chunk_s, search_s)]


def onset_ms(samples: FloatArray, start_ms: int = 0, threshold: float = 0.1) -> float:
    """Where the signal first exceeds ``threshold`` (ms on the media timeline); fails on silence."""
    loud = np.flatnonzero(np.abs(samples) > threshold)
    assert loud.size, "no tone found"
    return start_ms + int(loud[0]) * 1000 / SAMPLE_RATE


@pytest.fixture(scope="module")
def tone_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 s MP4 (H.264 + AAC 44.1 kHz) with a 1 kHz tone from 2345 ms to 2745 ms."""
    return write_mp4(tmp_path_factory.mktemp("tone") / "tone.mp4", tone_track(4000, 2345))


def test_extracts_the_whole_audio_as_16khz_mono(tone_video: Path) -> None:
    info = AudioSource(tone_video).info
    clip = extract_audio(tone_video)
    assert clip.sample_rate == SAMPLE_RATE and clip.samples.dtype == np.float32 and clip.samples.ndim == 1
    assert info.duration_ms is not None
    assert abs(clip.duration_ms - info.duration_ms) <= TOLERANCE_MS
    assert clip.start_ms == 0 and clip.media_duration_ms == info.duration_ms


@pytest.mark.parametrize(("video_codec", "tone_at_ms"), [("libx264", 1000), ("mpeg4", 2345), ("libx264", 40)])
def test_aac_priming_does_not_shift_timestamps(tmp_path: Path, video_codec: str, tone_at_ms: int) -> None:
    """AAC encoders prepend ~1024 priming samples; a tone at a known time must be found at that time."""
    path = replace(mp4(tone_track(3000, tone_at_ms)), video=Video(video_codec)).write(tmp_path / "tone.mp4")
    clip = extract_audio(path)
    assert onset_ms(clip.samples) == pytest.approx(tone_at_ms, abs=TOLERANCE_MS)


def test_an_audio_track_starting_after_the_video_keeps_player_times(tmp_path: Path) -> None:
    """The track starts 500 ms into the media and its tone 1000 ms into the track: 1500 ms in the player."""
    path = replace(mp4(tone_track(3000, 1000)), duration_ms=4000, audio_start_ms=500).write(tmp_path / "late.mp4")
    clip = extract_audio(path)
    assert onset_ms(clip.samples) == pytest.approx(1500, abs=TOLERANCE_MS)
    assert float(np.abs(clip.samples[: SAMPLE_RATE * 4 // 10]).max()) == 0.0  # padded with silence


def test_a_range_keeps_media_timestamps(tone_video: Path) -> None:
    clip = extract_audio(tone_video, start_ms=1500, end_ms=3500)
    assert clip.start_ms == 1500
    assert clip.duration_ms == pytest.approx(2000, abs=TOLERANCE_MS)
    assert onset_ms(clip.samples, clip.start_ms) == pytest.approx(2345, abs=TOLERANCE_MS)
    assert clip.media_duration_ms == pytest.approx(4000, abs=TOLERANCE_MS)


def test_a_range_that_ends_before_the_tone_contains_silence_only(tone_video: Path) -> None:
    clip = extract_audio(tone_video, start_ms=500, end_ms=2000)
    assert clip.duration_ms == pytest.approx(1500, abs=TOLERANCE_MS)
    assert float(np.abs(clip.samples).max()) < 0.05


def test_progress_is_reported_up_to_done(tone_video: Path) -> None:
    seen: list[float] = []
    extract_audio(tone_video, on_progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0, abs=0.05)


def test_no_audio_stream_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoAudioStreamError, match="no audio stream"):
        extract_audio(silent_mp4(tmp_path / "silent.mp4"))


def test_a_file_that_is_not_media_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnreadableMediaError, match="not a readable audio or video file"):
        extract_audio(not_media(tmp_path / "list.mp4"))


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnreadableMediaError, match="missing"):
        extract_audio(tmp_path / "gone.mp4")


def test_truncated_file_with_index_at_the_end_is_unreadable(tone_video: Path, tmp_path: Path) -> None:
    with pytest.raises(UnreadableMediaError, match=r"damaged|not a readable"):
        extract_audio(truncated_copy(tone_video, tmp_path / "cut.mp4", keep=0.7))


def test_truncated_file_with_index_first_is_reported_as_damaged(tmp_path: Path) -> None:
    """A faststart MP4 cut short still opens; the missing tail must not pass as a complete transcript."""
    source = replace(mp4(tone_track(4000, 1000)), options={"movflags": "faststart"}).write(tmp_path / "fast.mp4")
    with pytest.raises((UnreadableMediaError, TruncatedMediaError), match=r"damaged|incomplete"):
        extract_audio(truncated_copy(source, tmp_path / "cut.mp4", keep=0.6))


def test_streamed_pieces_match_the_whole_extraction(tone_video: Path) -> None:
    """What the backends consume piece by piece is exactly what a full extraction gives, in order."""
    whole = extract_audio(tone_video)
    source = AudioSource(tone_video)
    pieces = list(source.chunks(max_chunk_s=1.5, search_s=0.5))
    assert len(pieces) >= 3 and all(p.duration_ms <= 1500 for p in pieces)
    assert np.array_equal(np.concatenate([p.samples for p in pieces]), whole.samples)
    offsets = [p.offset_ms for p in pieces]
    assert offsets[0] == 0 and offsets == sorted(offsets)
    assert source.decoded_ms == whole.duration_ms


def test_damage_found_while_streaming_is_raised_from_the_iteration(tmp_path: Path) -> None:
    source_file = replace(mp4(tone_track(4000, 1000)), options={"movflags": "faststart"}).write(tmp_path / "fast.mp4")
    source = AudioSource(truncated_copy(source_file, tmp_path / "cut.mp4", keep=0.6))  # opens fine
    with pytest.raises((UnreadableMediaError, TruncatedMediaError)):
        list(source.chunks(max_chunk_s=1.0, search_s=0.2))


def test_split_points_cut_in_the_quietest_place() -> None:
    rate = 1000
    samples = np.full(10 * rate, 0.5, dtype=np.float32)
    samples[3500:3600] = 0.0  # the only silence inside the search window of the first chunk
    ranges = split_points(samples, rate, max_chunk_s=4.0, search_s=1.0)
    assert ranges[0][0] == 0 and 3500 <= ranges[0][1] <= 3600
    assert all(end - begin <= 4 * rate for begin, end in ranges)
    assert [b for b, _ in ranges[1:]] == [e for _, e in ranges[:-1]] and ranges[-1][1] == len(samples)


def test_short_audio_is_one_chunk() -> None:
    samples = np.zeros(100, dtype=np.float32)
    assert split_points(samples, 16_000, 60.0, 10.0) == [(0, 100)]


def test_ogg_opus_upload_keeps_duration_and_timing(tone_video: Path, tmp_path: Path) -> None:
    clip = extract_audio(tone_video)
    data = encode_ogg_opus(clip.samples, clip.sample_rate)
    assert data[:4] == b"OggS" and len(data) < clip.samples.nbytes / 10
    upload = tmp_path / "upload.ogg"
    upload.write_bytes(data)
    decoded = extract_audio(upload)
    assert decoded.duration_ms == pytest.approx(clip.duration_ms, abs=TOLERANCE_MS)
    assert onset_ms(decoded.samples) == pytest.approx(2345, abs=TOLERANCE_MS)


def test_encoded_chunks_cover_the_clip_in_order(tone_video: Path) -> None:
    clip = extract_audio(tone_video)
    chunks = list(encoded_chunks(clip, max_chunk_s=1.5, search_s=0.5))
    assert len(chunks) >= 3
    assert chunks[0].offset_ms == 0
    for previous, following in itertools.pairwise(chunks):
        assert following.offset_ms == pytest.approx(previous.offset_ms + previous.duration_ms, abs=1)
    assert sum(c.duration_ms for c in chunks) == pytest.approx(clip.duration_ms, abs=5)
