"""The transcript panel's rules on their own: search words, hits, highlights, pages, the segment at the
playhead."""

from __future__ import annotations

from agent_app.media.transcript_types import TranscriptSegment
from agent_app.ui.transcript_view import (
    matching_indexes,
    page_holding,
    pages_of,
    search_words,
    segment_at,
    word_hits,
)

SEGMENTS = [
    TranscriptSegment(start_ms=0, end_ms=900, text="Welcome to the Harbour café."),
    TranscriptSegment(start_ms=1000, end_ms=1900, text="The boats are back; *nets* [drying] $5."),
    TranscriptSegment(start_ms=2500, end_ms=3000, text="Harbourmaster says hello."),
]


def test_search_matches_every_word_as_a_prefix_ignoring_case_and_accents() -> None:
    assert search_words("  Harbour,  CAFE harbour ") == ["harbour", "cafe"]
    assert matching_indexes(SEGMENTS, search_words("harbour cafe")) == [0]
    assert matching_indexes(SEGMENTS, search_words("harb")) == [0, 2]  # a word's beginning finds it
    assert matching_indexes(SEGMENTS, search_words("arbour")) == []  # not the middle of a word
    assert matching_indexes(SEGMENTS, search_words("")) == [0, 1, 2]


def test_a_search_marks_whole_spoken_words() -> None:
    said = ["Tomatoes,", "tomato", "potatoes", "sea-side", "Café."]
    assert word_hits(said, search_words("tomato")) == [True, True, False, False, False]  # "tomatoes" whole
    assert word_hits(said, search_words("side cafe")) == [False, False, False, True, True]
    assert word_hits(said, []) == [False] * 5


def test_pages_are_named_by_the_stretch_of_the_clip_they_cover() -> None:
    pages = pages_of([0, 1, 2], SEGMENTS, size=2)
    assert [(p.first, p.last, p.label) for p in pages] == [(0, 2, "0:00 – 0:01"), (2, 3, "0:02 – 0:03")]
    assert page_holding(pages, 2) == 1 and page_holding(pages, 7) == 0


def test_the_segment_at_the_playhead_and_none_in_a_pause() -> None:
    starts = [s.start_ms for s in SEGMENTS]
    assert [segment_at(starts, SEGMENTS, ms) for ms in (0, 899, 950, 1000, 2600, 3000, -1)] == [
        0, 0, None, 1, 2, None, None,
    ]  # fmt: skip
