"""Broken media as it arrives: cut-off uploads (10/50/90 %), empty files, random bytes named .mp4, an MP4
whose index (moov) was to be written at the end, damage in the middle. Decisions (README, Transcription):

- nothing readable (empty, random bytes, MP4 without its index): the upload is refused, naming the file;
- cut short (the file declares more than it holds): a tool error naming the asset and saying it is
  incomplete, never half a transcript that looks whole;
- damaged in the middle but readable around it: the words around the damage, with a note saying where
  audio is missing (more use to a creator than nothing, and never passed off as complete).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent_app.media import TranscriptionError
from agent_app.storage import AssetRejectedError
from tests.transcribe_support import transcribe_upload
from testsupport.media_factory import (
    SENTENCES,
    MediaFile,
    Video,
    espeak_available,
    spoken,
    truncated_copy,
    word_error_rate,
)

pytestmark = [
    pytest.mark.skipif(not espeak_available(), reason="needs Debian's espeak-ng"),
    pytest.mark.usefixtures("moonshine_transcription"),  # the media pipeline, on the backend its word bounds fit
]

TWO = SENTENCES[:2]


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Whole files of two spoken sentences (~8 s) in the formats whose damage behaves differently."""
    folder = tmp_path_factory.mktemp("originals")
    voice = spoken(TWO, 48_000)[0][None]
    return {
        "index-last.mp4": MediaFile(voice, 48_000, codec="aac", video=Video("libx264", 10)).write(folder / "a.mp4"),
        "index-first.mp4": MediaFile(
            voice, 48_000, codec="aac", video=Video("libx264", 10), options={"movflags": "faststart"}
        ).write(folder / "b.mp4"),
        "podcast.mp3": MediaFile(voice, 48_000, codec="libmp3lame").write(folder / "c.mp3"),
        "recording.wav": MediaFile(voice, 48_000, codec="pcm_s16le").write(folder / "d.wav"),
        "browser.webm": MediaFile(voice, 48_000, codec="libopus", video=Video("libvpx", 10)).write(folder / "e.webm"),
        "obs.mkv": MediaFile(voice, 48_000, codec="flac", video=Video("libx264", 10)).write(folder / "f.mkv"),
    }


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("kind", ["index-first.mp4", "podcast.mp3", "recording.wav", "browser.webm", "obs.mkv"])
def test_a_cut_off_upload_is_an_error_naming_the_asset_not_half_a_transcript(
    kind: str, keep: float, originals: dict[str, Path], tmp_path: Path
) -> None:
    cut = truncated_copy(originals[kind], tmp_path / f"cut-{kind}", keep)
    with pytest.raises(TranscriptionError, match=rf"cut-{kind}.*incomplete|cut-{kind}.*damaged"):
        transcribe_upload(cut, tmp_path / "data")


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_an_mp4_cut_before_its_index_is_refused_at_upload(
    keep: float, originals: dict[str, Path], tmp_path: Path
) -> None:
    cut = truncated_copy(originals["index-last.mp4"], tmp_path / "phone.mp4", keep)
    with pytest.raises(AssetRejectedError, match=r"“phone\.mp4” is not a readable audio or video file"):
        transcribe_upload(cut, tmp_path / "data")


def test_an_empty_file_is_refused_at_upload(tmp_path: Path) -> None:
    (tmp_path / "empty.mp4").write_bytes(b"")
    with pytest.raises(AssetRejectedError, match=r"“empty\.mp4” is empty"):
        transcribe_upload(tmp_path / "empty.mp4", tmp_path / "data")


def test_random_bytes_named_mp4_are_refused_at_upload(tmp_path: Path) -> None:
    (tmp_path / "video.mp4").write_bytes(np.random.default_rng(3).bytes(200_000))
    with pytest.raises(AssetRejectedError, match=r"“video\.mp4” is not a readable audio or video file"):
        transcribe_upload(tmp_path / "video.mp4", tmp_path / "data")


@pytest.mark.parametrize("kind", ["index-first.mp4", "browser.webm"])
def test_damage_in_the_middle_keeps_the_words_around_it_with_a_note(
    kind: str, originals: dict[str, Path], tmp_path: Path
) -> None:
    data = bytearray(originals[kind].read_bytes())
    middle, span = len(data) // 2, len(data) // 10
    data[middle : middle + span] = np.random.default_rng(1).bytes(span)
    damaged = tmp_path / f"damaged-{kind}"
    damaged.write_bytes(bytes(data))
    result = transcribe_upload(damaged, tmp_path / "data")[1]
    assert word_error_rate(TWO[0], result["segments"][0]["text"]) <= 0.15  # before the damage: intact
    assert "damaged" in result["note"] or "gaps" in result["note"], result
    assert result["segments"][-1]["endMs"] <= result["durationMs"]
