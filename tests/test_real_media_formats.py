"""What users really upload, made at test time (PyAV + espeak-ng; nothing committed), through the real
upload import, the ``transcribe_video`` tool and the offline Moonshine backend.

Each case checks the words (WER) and the times (each sentence's segment within 300 ms of where its sound
is). Every clip is two short sentences (~8 s), so each real transcription costs well under a second.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from agent_app.storage import AssetRejectedError
from tests.media_samples import make_png
from tests.transcribe_support import transcribe_upload
from testsupport.media_factory import (
    SENTENCES,
    FloatArray,
    MediaFile,
    Video,
    espeak_available,
    spoken,
    word_error_rate,
)

pytestmark = [
    pytest.mark.skipif(not espeak_available(), reason="needs Debian's espeak-ng"),
    pytest.mark.usefixtures("moonshine_transcription"),  # the media pipeline, on the backend its word bounds fit
]

TWO = SENTENCES[:2]
TOLERANCE_MS = 300


def speech(rate: int) -> FloatArray:
    return spoken(TWO, rate)[0]


def truth() -> list[tuple[int, int, str]]:
    return spoken(TWO, 48_000)[1]


def assert_transcribed(result: dict[str, Any], *, max_wer: float = 0.15, shift_ms: int = 0) -> None:
    """The two sentences' words, each segment within the tolerance of its sentence's sound."""
    assert word_error_rate(" ".join(TWO), result["text"]) <= max_wer, result["text"]
    segments = result["segments"]
    assert len(segments) == len(TWO), segments
    for segment, (onset, offset, _) in zip(segments, truth(), strict=True):
        assert abs(segment["startMs"] - (onset + shift_ms)) <= TOLERANCE_MS, (segment, onset + shift_ms)
        assert abs(segment["endMs"] - (offset + shift_ms)) <= TOLERANCE_MS, (segment, offset + shift_ms)
        assert 0 <= segment["startMs"] < segment["endMs"] <= result["durationMs"]


Maker = Callable[[Path], Path]


def mono(rate: int, codec: str, **kwargs: Any) -> Maker:
    return lambda path: MediaFile(speech(rate)[None], rate, codec=codec, **kwargs).write(path)


def channels(rate: int, codec: str, count: int, **kwargs: Any) -> Maker:
    return lambda path: MediaFile(np.vstack([speech(rate) * 0.5] * count), rate, codec=codec, **kwargs).write(path)


UPLOADS: dict[str, Maker] = {
    "phone.mp4": mono(48_000, "aac", video=Video("libx264", 30)),
    "camera.mov": mono(48_000, "aac", video=Video("libx264", 25)),
    "studio.mov": mono(48_000, "pcm_s16le", video=Video("libx264", 25)),
    "browser-vp8.webm": mono(48_000, "libopus", video=Video("libvpx", 10)),
    "browser-vp9.webm": mono(48_000, "libopus", video=Video("libvpx-vp9", 10)),
    "obs.mkv": mono(48_000, "flac", video=Video("libx264", 10)),
    "film-ac3-5.1.mkv": channels(48_000, "ac3", 6, video=Video("libx264", 10)),
    "podcast.mp3": mono(44_100, "libmp3lame"),
    "voice-note.m4a": mono(44_100, "aac", container_format="ipod"),
    "apple-lossless.m4a": mono(44_100, "alac", container_format="ipod"),
    "voice-note.ogg": mono(48_000, "libopus"),
    "voice-note.opus": mono(48_000, "libopus", container_format="ogg"),
    "archive.flac": mono(44_100, "flac"),
    "camcorder.mts": mono(48_000, "aac", container_format="mpegts", video=Video("mpeg2video", 25)),
    "s16-stereo.wav": channels(44_100, "pcm_s16le", 2),
    "s24.wav": mono(48_000, "pcm_s24le"),
    "f32.wav": mono(48_000, "pcm_f32le"),
    "u8.wav": mono(22_050, "pcm_u8"),
    "surround-5.1.wav": channels(48_000, "pcm_s16le", 6),
    **{f"rate-{rate}.wav": mono(rate, "pcm_s16le") for rate in (8_000, 11_025, 22_050, 96_000)},
}


@pytest.mark.parametrize("name", list(UPLOADS))
def test_an_upload_of_each_common_format_is_transcribed_with_times(name: str, tmp_path: Path) -> None:
    source = UPLOADS[name](tmp_path / name)
    asset, result = transcribe_upload(source, tmp_path / "data")
    assert asset.kind == ("video" if name.endswith((".mp4", ".mov", ".webm", ".mkv", ".mts")) else "audio")
    assert_transcribed(result)


def test_an_mp3_with_id3_tags_and_cover_art_is_audio_and_transcribed(tmp_path: Path) -> None:
    """The cover picture is a 'video' stream of one still image: not a video, and not in the way."""
    plain = MediaFile(speech(44_100)[None], 44_100, codec="libmp3lame").write(tmp_path / "plain.mp3")
    cover = make_png(tmp_path / "cover.png")
    tagged = tmp_path / "episode.mp3"
    with av.open(str(plain)) as audio_in, av.open(str(cover)) as image_in, \
            av.open(str(tagged), "w", format="mp3", options={"id3v2_version": "3"}) as out:  # fmt: skip
        out.metadata["title"] = "Episode 1"
        audio = out.add_stream_from_template(audio_in.streams.audio[0])
        picture = out.add_stream_from_template(image_in.streams.video[0])
        picture.disposition = av.stream.Disposition.attached_pic
        for packet in image_in.demux(image_in.streams.video[0]):
            if packet.size:
                packet.stream = picture
                out.mux(packet)
        for sound in audio_in.demux(audio_in.streams.audio[0]):
            if sound.dts is not None:
                sound.stream = audio
                out.mux(sound)
    with av.open(str(tagged)) as check:
        assert len(check.streams.video) == 1  # the cover really is there
    asset, result = transcribe_upload(tagged, tmp_path / "data")
    assert asset.kind == "audio"
    assert_transcribed(result)


def test_speech_in_one_stereo_channel_only_is_transcribed(tmp_path: Path) -> None:
    left = speech(44_100)
    path = MediaFile(np.vstack([left, np.zeros_like(left)]), 44_100, codec="pcm_s16le").write(tmp_path / "lav.wav")
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1])


@pytest.mark.parametrize("codec", ["pcm_s16le", "aac"])
def test_phase_inverted_stereo_does_not_cancel_to_silence(codec: str, tmp_path: Path) -> None:
    """A miswired microphone: right = -left. A plain average is silence; we take one channel instead."""
    left = speech(48_000) * 0.8
    name = "inverted.wav" if codec == "pcm_s16le" else "inverted.m4a"
    path = MediaFile(np.vstack([left, -left]), 48_000, codec=codec).write(tmp_path / name)
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1])


def test_a_silent_first_audio_track_is_passed_over_for_the_one_with_speech(tmp_path: Path) -> None:
    """OBS writes a track per source; the desktop track may be empty while the microphone track speaks."""
    voice = speech(48_000)
    path = MediaFile(
        np.zeros((1, len(voice)), dtype=np.float32),
        48_000,
        codec="aac",
        video=Video("libx264", 10),
        extra_audio=(voice[None],),
    ).write(tmp_path / "obs.mkv")
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1])


def test_with_two_speaking_tracks_the_first_default_one_is_transcribed(tmp_path: Path) -> None:
    """Language dubs: every track has sound, so the file's own choice (default, else first) stands."""
    other, _ = spoken(("Completely different words are spoken on this track.",), 48_000)
    voice = speech(48_000)
    other = np.pad(other, (0, max(0, len(voice) - len(other))))[: len(voice)]
    path = MediaFile(voice[None], 48_000, codec="aac", extra_audio=(other[None],)).write(tmp_path / "dub.mkv")
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1])


def test_an_mpeg_ts_starting_at_a_large_timestamp_keeps_player_times(tmp_path: Path) -> None:
    """Broadcast and camcorder streams start at an arbitrary clock (here 95 s); players show it as 0:00."""
    path = MediaFile(
        speech(48_000)[None],
        48_000,
        codec="aac",
        container_format="mpegts",
        audio_start_ms=95_000,
        duration_ms=len(speech(48_000)) * 1000 // 48_000,
    ).write(tmp_path / "broadcast.ts")
    with av.open(str(path)) as check:
        assert check.start_time is not None and check.start_time > 90 * av.time_base
    result = transcribe_upload(path, tmp_path / "data")[1]
    assert result["durationMs"] < 10_000
    assert_transcribed(result)


@pytest.mark.parametrize("name", ["late.mp4", "late.webm"])
def test_audio_starting_after_the_video_keeps_player_times(name: str, tmp_path: Path) -> None:
    codec, video = ("aac", "libx264") if name.endswith("mp4") else ("libopus", "libvpx")
    path = MediaFile(speech(48_000)[None], 48_000, codec=codec, video=Video(video, 10), audio_start_ms=2_000).write(
        tmp_path / name
    )
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1], shift_ms=2_000)


@pytest.mark.parametrize("name", ["short-audio.mp4", "short-audio.webm"])
def test_audio_ending_before_the_video_is_not_mistaken_for_a_cut_file(name: str, tmp_path: Path) -> None:
    codec, video = ("aac", "libx264") if name.endswith("mp4") else ("libopus", "libvpx")
    path = MediaFile(speech(48_000)[None], 48_000, codec=codec, video=Video(video, 10), duration_ms=14_000).write(
        tmp_path / name
    )
    result = transcribe_upload(path, tmp_path / "data")[1]
    assert result["durationMs"] >= 13_500
    assert_transcribed(result)


def test_a_file_type_the_page_refuses_says_which_types_it_takes(tmp_path: Path) -> None:
    path = mono(16_000, "pcm_s16le", container_format="wav")(tmp_path / "talk.xyz")
    with pytest.raises(AssetRejectedError, match=r"mp4.*flac"):
        transcribe_upload(path, tmp_path / "data")


@pytest.mark.parametrize("name", ["paused.mkv", "paused.mp4"])
def test_a_hole_in_the_audio_keeps_later_words_at_their_times_and_is_noted(name: str, tmp_path: Path) -> None:
    """A recorder paused for 3 s after the first sentence: the second must stay 3 s later, not slide back."""
    first_end = truth()[0][1] + 200
    path = MediaFile(
        speech(48_000)[None], 48_000, codec="aac", video=Video("libx264", 10), hole=(first_end, 3_000)
    ).write(tmp_path / name)
    result = transcribe_upload(path, tmp_path / "data")[1]
    assert word_error_rate(" ".join(TWO), result["text"]) <= 0.15
    second = result["segments"][1]
    assert abs(second["startMs"] - (truth()[1][0] + 3_000)) <= TOLERANCE_MS, second
    assert "gaps" in result["note"]


def test_a_variable_frame_rate_phone_video_keeps_audio_times(tmp_path: Path) -> None:
    path = MediaFile(speech(48_000)[None], 48_000, codec="aac", video=Video("libx264", 1000, vfr=True)).write(
        tmp_path / "vfr.mp4"
    )
    with av.open(str(path)) as check:
        stamps = [p.pts for p in check.demux(check.streams.video[0]) if p.pts is not None]
        steps = set(np.diff(sorted(stamps)).tolist())
        assert len(steps) > 2  # really variable
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1])


def test_an_mp4_track_starting_after_zero_keeps_its_offset_like_the_player(tmp_path: Path) -> None:
    """An empty edit delays the whole file: a browser shows nothing for 1.5 s, so neither do the times
    (only MPEG-TS/PS clocks are moved to zero)."""
    path = MediaFile(speech(48_000)[None], 48_000, codec="aac", container_format="ipod", audio_start_ms=1_500).write(
        tmp_path / "delayed.m4a"
    )
    with av.open(str(path)) as check:
        assert check.start_time is not None and check.start_time >= 1_400_000
    assert_transcribed(transcribe_upload(path, tmp_path / "data")[1], shift_ms=1_500)
