"""Subtitle export, checked by independent parsers (``srt`` and ``webvtt-py``), not by our own code."""

from __future__ import annotations

import datetime as dt
import io
import json

import srt
import webvtt

from agent_app.media.subtitles import to_json, to_srt, to_text, to_vtt, to_vtt_words
from agent_app.media.transcript_types import Transcript, TranscriptSegment, TranscriptWord


def sample() -> Transcript:
    return Transcript(
        duration_ms=3_725_000,
        language="en",
        backend="local",
        model="test",
        segments=[
            TranscriptSegment(start_ms=320, end_ms=3_904, text="The quick brown fox."),
            TranscriptSegment(start_ms=4_000, end_ms=4_000, text="An instant."),
            TranscriptSegment(start_ms=5_000, end_ms=6_000, text="   "),
            TranscriptSegment(start_ms=61_005, end_ms=62_500, text="Fish & chips <cheap> --> here\n\nnext line"),
            TranscriptSegment(start_ms=3_661_001, end_ms=3_700_000, text="Past the hour."),
        ],
    )


def test_srt_parses_with_the_srt_library() -> None:
    subtitles = list(srt.parse(to_srt(sample()), ignore_errors=False))
    assert [s.index for s in subtitles] == [1, 2, 3, 4]
    assert subtitles[0].start == dt.timedelta(milliseconds=320)
    assert subtitles[0].end == dt.timedelta(milliseconds=3_904)
    assert subtitles[0].content == "The quick brown fox."
    assert subtitles[1].end > subtitles[1].start  # zero-length cue widened
    assert "\n\n" not in subtitles[2].content and "-->" not in subtitles[2].content
    assert subtitles[3].start == dt.timedelta(hours=1, minutes=1, seconds=1, milliseconds=1)


def test_vtt_parses_with_webvtt_py() -> None:
    captions = webvtt.from_buffer(io.StringIO(to_vtt(sample()))).captions
    assert len(captions) == 4
    assert captions[0].start == "00:00:00.320" and captions[0].end == "00:00:03.904"
    assert captions[0].text == "The quick brown fox."
    assert captions[2].start == "00:01:01.005"
    assert "&amp;" in captions[2].raw_text and "&lt;cheap&gt;" in captions[2].raw_text
    assert captions[3].start == "01:01:01.001"


def test_vtt_starts_with_the_header() -> None:
    assert to_vtt(sample()).startswith("WEBVTT\n\n")


def test_plain_text_is_one_segment_per_line() -> None:
    assert to_text(sample()).splitlines()[0] == "The quick brown fox."
    assert len(to_text(sample()).splitlines()) == 4


def test_empty_transcript_exports_are_still_valid() -> None:
    empty = Transcript(duration_ms=1000, backend="local", model="test")
    assert list(srt.parse(to_srt(empty))) == []
    assert webvtt.from_buffer(io.StringIO(to_vtt(empty))).captions == []
    assert to_text(empty) == ""


def timed() -> Transcript:
    words = [
        TranscriptWord(start_ms=320, end_ms=700, text="Fish"),
        TranscriptWord(start_ms=900, end_ms=1_100, text="&"),
        TranscriptWord(start_ms=1_200, end_ms=3_904, text="<chips>"),
    ]
    return Transcript(
        duration_ms=10_000,
        language="de",
        backend="local",
        model="base",
        segments=[
            TranscriptSegment(start_ms=320, end_ms=3_904, text="Fish & <chips>", words=words),
            TranscriptSegment(start_ms=5_000, end_ms=6_000, text="No words here."),
        ],
    )


def test_vtt_with_word_timings_carries_each_word_start_inside_its_cue() -> None:
    text = to_vtt_words(timed())
    captions = webvtt.from_buffer(io.StringIO(text)).captions
    assert [(c.start, c.end) for c in captions] == [("00:00:00.320", "00:00:03.904"), ("00:00:05.000", "00:00:06.000")]
    assert captions[0].raw_text == "Fish <00:00:00.900>&amp; <00:00:01.200>&lt;chips&gt;"
    assert captions[0].text == "Fish &amp; &lt;chips&gt;"  # the parser strips the timestamp tags, not entities
    assert captions[1].raw_text == "No words here."


def test_json_export_keeps_segments_words_and_language() -> None:
    body = json.loads(to_json(timed()))
    assert (body["language"], body["durationMs"], body["backend"], body["model"]) == ("de", 10_000, "local", "base")
    assert body["segments"][0]["words"][2] == {"startMs": 1_200, "endMs": 3_904, "text": "<chips>"}
    assert body["segments"][1]["words"] == []
    assert Transcript.model_validate(body).segments == timed().segments
