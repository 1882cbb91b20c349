"""Which transcript segments the panel shows: search hits, pages of them, the segment at the playhead,
and which spoken words a search found. Plain functions over the segments, no Streamlit, so the panel
stays a thin drawing layer and the rules are tested on their own.

Search is case- and accent-insensitive and matches every word typed (in any order), the way a
creator looks for "harbour boat" in an hour of speech; each hit keeps its index in the full
transcript so its seek button and its page are the same as without a search.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from agent_app.media.transcript_types import TranscriptSegment
from agent_app.ui.formatting import format_duration

SEGMENTS_PER_PAGE = 25
"""Each segment is a button; a few dozen per page keep reruns fast on an hour-long transcript."""

_WORD = re.compile(r"\w+", re.UNICODE)


def _fold(text: str) -> str:
    """Lower case without accents, one character per character of ``text`` (so spans map back)."""
    if text.isascii():
        return text.lower()
    folded = []
    for char in text:
        base = unicodedata.normalize("NFKD", char)
        kept = "".join(c for c in base if not unicodedata.combining(c)).lower()
        folded.append(kept if len(kept) == 1 else char.lower()[:1] or char)
    return "".join(folded)


def search_words(query: str) -> list[str]:
    """The words of ``query`` as search terms (folded, duplicates dropped, order kept)."""
    return list(dict.fromkeys(_fold(word) for word in _WORD.findall(query)))


def matching_indexes(segments: Sequence[TranscriptSegment], words: Sequence[str]) -> list[int]:
    """Indexes of the segments containing every word (as a word prefix: "harb" finds "harbour")."""
    if not words:
        return list(range(len(segments)))
    patterns = [re.compile(r"(?<!\w)" + re.escape(word)) for word in words]
    hits = []
    for index, segment in enumerate(segments):
        folded = _fold(segment.text)
        if all(pattern.search(folded) for pattern in patterns):
            hits.append(index)
    return hits


def word_hits(said: Sequence[str], words: Sequence[str]) -> list[bool]:
    """For each spoken word of ``said``, whether a search word begins it (or one of its parts, as in
    "sea-side"): the whole word is marked, "tomatoes" and not "tomato" + "es"."""
    if not words:
        return [False] * len(said)
    return [any(part.startswith(term) for part in _WORD.findall(_fold(text)) for term in words) for text in said]


def segment_at(starts: Sequence[int], segments: Sequence[TranscriptSegment], playhead_ms: int) -> int | None:
    """Index of the segment playing at ``playhead_ms`` (``starts`` are the segments' sorted starts)."""
    index = bisect.bisect_right(starts, playhead_ms) - 1
    if index < 0:
        return None
    segment = segments[index]
    return index if playhead_ms < max(segment.end_ms, segment.start_ms + 1) else None


@dataclass(frozen=True)
class Page:
    """One page of the shown segments: positions ``first``..``last`` (exclusive) in the shown list."""

    number: int
    first: int
    last: int
    label: str


def pages_of(shown: Sequence[int], segments: Sequence[TranscriptSegment], size: int = SEGMENTS_PER_PAGE) -> list[Page]:
    """The pages of ``shown`` (segment indexes), each labelled by the stretch of the clip it covers,
    e.g. ``"12:40 – 15:02"``: what a user jumps to is a time, not a page number."""
    pages = []
    for number, first in enumerate(range(0, len(shown), size)):
        last = min(first + size, len(shown))
        begin = segments[shown[first]].start_ms
        end = segments[shown[last - 1]].end_ms
        pages.append(Page(number, first, last, f"{format_duration(begin)} – {format_duration(end)}"))
    return pages


def page_holding(pages: Sequence[Page], position: int) -> int:
    """The number of the page showing ``position`` of the shown list (0 when none does)."""
    return next((page.number for page in pages if page.first <= position < page.last), 0)
