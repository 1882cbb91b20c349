"""Corrections and speaker names: stored beside the machine's transcript in both storage backends, applied
with the word times carried over to the new words, written by the exports and given to the assistant."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.media import edited_transcript, to_srt, to_text, to_vtt, to_vtt_words
from agent_app.media.transcript_edit import respread_words
from agent_app.media.transcript_types import SpeakerTurn, Transcript, TranscriptSegment, TranscriptWord, label_speakers
from agent_app.storage import NotFoundError, ProjectMediaLibrary
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits, checked_correction, checked_speaker_name
from plugins.transcribe_video import tool_result
from tests.media_samples import make_wav
from tests.storage_backends import BACKENDS, AnyStorage, Backend, backend_for


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """SQLite and PostgreSQL (a real server, the suite's fixture)."""
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def _words(*timed: tuple[int, int, str]) -> list[TranscriptWord]:
    return [TranscriptWord(start_ms=start, end_ms=end, text=text) for start, end, text in timed]


HEARD = _words((0, 400, "We"), (400, 800, "grow"), (800, 1400, "tomatos"), (1400, 1800, "and"), (1800, 2400, "basel"))


def test_kept_words_keep_their_times_and_changed_ones_share_the_gap() -> None:
    new = respread_words(HEARD, ["We", "grow", "ripe", "tomatoes", "and", "basil"])
    assert [(w.text, w.start_ms, w.end_ms) for w in new] == [
        ("We", 0, 400), ("grow", 400, 800),
        ("ripe", 800, 1000), ("tomatoes", 1000, 1400),  # the changed run shares its stretch by length
        ("and", 1400, 1800), ("basil", 1800, 2400),
    ]  # fmt: skip
    fewer = respread_words(HEARD, ["Tomatoes!"])
    assert [(w.start_ms, w.end_ms) for w in fewer] == [(0, 2400)]  # one word over the whole segment
    assert respread_words(HEARD, []) == []


def _transcript() -> Transcript:
    segments = [
        TranscriptSegment(start_ms=0, end_ms=2400, text="We grow tomatos and basel", words=HEARD),
        TranscriptSegment(start_ms=3000, end_ms=4000, text="Thanks for watching."),
    ]
    turns = [SpeakerTurn(start_ms=0, end_ms=2500, speaker="S1"), SpeakerTurn(start_ms=2900, end_ms=4100, speaker="S2")]
    return Transcript(
        duration_ms=5000, language="en", backend="local", model="m", segments=label_speakers(segments, turns)
    )


def test_a_correction_applies_only_where_its_segment_still_is() -> None:
    edits = TranscriptEdits(
        corrections=[
            SegmentCorrection(start_ms=0, original="We grow tomatos and basel", text="We grow tomatoes and basil"),
            SegmentCorrection(start_ms=3000, original="Something else was heard", text="Not applied"),
        ],
        speaker_names={"S1": "Ana", "S9": "Nobody"},
    )
    edited = edited_transcript(_transcript(), edits)
    first, second = edited.segments
    assert first.text == "We grow tomatoes and basil" and first.original_text == "We grow tomatos and basel"
    assert [w.text for w in first.words] == first.text.split()
    assert second.text == "Thanks for watching." and second.original_text is None  # another transcript's edit
    assert edited.speaker_names == {"S1": "Ana"}  # a label no segment has is left out


def test_the_exports_write_corrections_and_speakers() -> None:
    edits = TranscriptEdits(
        corrections=[
            SegmentCorrection(start_ms=0, original="We grow tomatos and basel", text="We grow <ripe> tomatoes")
        ],
        speaker_names={"S1": "Ana"},
    )
    edited = edited_transcript(_transcript(), edits)
    assert "<v Ana>We grow &lt;ripe&gt; tomatoes" in to_vtt(edited) and "<v S2>Thanks" in to_vtt(edited)
    assert "<v Ana>We <00:00:00.400>grow" in to_vtt_words(edited)
    assert "Ana: We grow <ripe> tomatoes\n" in to_srt(edited)
    assert to_text(edited) == "Ana: We grow <ripe> tomatoes\nS2: Thanks for watching.\n"


def test_the_assistant_gets_the_corrected_text_and_the_speakers() -> None:
    from agent_app.types import MediaAsset

    edits = TranscriptEdits(
        corrections=[SegmentCorrection(start_ms=0, original="We grow tomatos and basel", text="We grow tomatoes")],
        speaker_names={"S2": "Ben"},
    )
    result = tool_result(MediaAsset(id="a1", name="talk.mp4"), edited_transcript(_transcript(), edits), cached=True)
    assert result["speakers"] == ["S1", "Ben"]
    assert result["segments"][0] == {
        "startMs": 0, "endMs": 2400, "text": "We grow tomatoes", "speaker": "S1", "correctedByUser": True
    }  # fmt: skip
    assert result["segments"][1]["speaker"] == "Ben" and "tomatos" not in json.dumps(result)


def test_bad_edits_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="cannot be empty"):
        checked_correction("  \n ")
    with pytest.raises(ValueError, match="at most 5,000 characters"):
        checked_correction("x" * 5001)
    with pytest.raises(ValueError, match="at most 60"):
        checked_speaker_name("n" * 61)
    assert checked_correction(" We  grow\ntomatoes ") == "We grow tomatoes"


def test_edits_are_stored_per_asset_beside_the_transcript(storage: AnyStorage, tmp_path: Path) -> None:
    project = storage.create_project("Garden")
    other = storage.create_project("Other")
    wav = make_wav(tmp_path / "tone.wav").read_bytes()
    asset = storage.import_asset(project.id, "talk.wav", io.BytesIO(wav))
    correction = SegmentCorrection(start_ms=0, original="We grow tomatos", text="We grow tomatoes")
    storage.save_correction(asset.id, correction)
    storage.save_correction(asset.id, correction.model_copy(update={"text": "We grow ripe tomatoes"}))  # replaced
    storage.save_correction(asset.id, SegmentCorrection(start_ms=3000, original="Thanks", text="Thank you"))
    storage.name_speaker(asset.id, "S1", "Ana")
    edits = storage.transcript_edits(asset.id)
    assert [(c.start_ms, c.original, c.text) for c in edits.corrections] == [
        (0, "We grow tomatos", "We grow ripe tomatoes"), (3000, "Thanks", "Thank you")
    ]  # fmt: skip
    assert edits.speaker_names == {"S1": "Ana"}
    storage.remove_correction(asset.id, 3000)
    storage.name_speaker(asset.id, "S1", "")  # an empty name shows the label again
    assert (
        len(storage.transcript_edits(asset.id).corrections) == 1
        and not storage.transcript_edits(asset.id).speaker_names
    )

    theirs = ProjectMediaLibrary(storage, other.id)  # another project neither reads nor writes them
    assert theirs.transcript_edits(asset.id) == TranscriptEdits()
    with pytest.raises(NotFoundError):
        theirs.save_correction(asset.id, correction)
    with pytest.raises(NotFoundError):
        storage.save_correction("no-such-asset", correction)
    storage.remove_asset(asset.id)  # the edits go with their asset
    assert storage.transcript_edits(asset.id) == TranscriptEdits()
