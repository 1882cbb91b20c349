"""A page of words against a page of segments: the transcript page as the panel draws it now (one component
holding 25 segments' timed words, clickable, the spoken one marked in the browser) against the page as it was
drawn before words (25 rows of a time button and a Markdown text), both in AppTest, in the same run, on the
same 25 segments of 15 timed words each. Target: the words page at most 1.1x the segments page.

Run: ``.venv/bin/python -m bench.bench_transcript_words`` (about half a minute).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from streamlit.testing.v1 import AppTest

if TYPE_CHECKING:
    from agent_app.media.transcript_types import Transcript

TARGET_RATIO = 1.1
SEGMENTS = 25
WORDS = 15


def segments_page() -> None:
    """The baseline: one page of segments as the panel drew it before words (button + Markdown per row)."""
    import streamlit as st

    from agent_app.ui.formatting import escape_markdown, format_duration
    from bench.bench_transcript_words import worded

    transcript = worded()
    with st.container(height=420, border=False):
        for index, segment in enumerate(transcript.segments):
            row = st.container(horizontal=True, vertical_alignment="center", gap="small", wrap=False)
            row.button(format_duration(segment.start_ms), key=f"seek_{index}", help="Play from here", width="content")
            row.markdown(escape_markdown(segment.text), width="stretch")


def words_page() -> None:
    """The page of words as the panel draws it now."""
    from agent_app.ui.transcript_element import PageActions, page_rows, transcript_page
    from bench.bench_transcript_words import worded

    transcript = worded()
    rows = page_rows(transcript, range(len(transcript.segments)), [])
    transcript_page("bench", rows, 3, PageActions(seek=lambda ms: None, edit=lambda index: None))


def worded() -> Transcript:
    from agent_app.media.transcript_types import Transcript, TranscriptSegment, TranscriptWord

    segments = []
    for index in range(SEGMENTS):
        start = index * 6_000
        words = [
            TranscriptWord(start_ms=start + n * 380, end_ms=start + n * 380 + 350, text=f"harbour{n}")
            for n in range(WORDS)
        ]
        segments.append(
            TranscriptSegment(
                start_ms=start, end_ms=words[-1].end_ms, text=" ".join(w.text for w in words), words=words
            )
        )
    return Transcript(duration_ms=SEGMENTS * 6_000, segments=segments, backend="local", model="bench")


def rerun_seconds(script: Callable[[], None], reruns: int) -> float:
    """The median rerun of ``script`` after a first run."""
    app = AppTest.from_function(script, default_timeout=120)
    app.run()
    if app.exception:
        raise RuntimeError(f"the page failed: {[e.value for e in app.exception]}")
    timings = []
    for _ in range(reruns):
        started = time.perf_counter()
        app.run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reruns", type=int, default=30, help="timed reruns per case (median reported)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds taken in turns (median ratio reported)")
    options = parser.parse_args()
    rerun_seconds(segments_page, 3)  # warm imports before measuring anything
    rerun_seconds(words_page, 3)
    ratios = []
    for round_number in range(1, options.rounds + 1):
        baseline = rerun_seconds(segments_page, options.reruns)
        words = rerun_seconds(words_page, options.reruns)
        ratios.append(words / baseline)
        print(
            f"round {round_number}: segments page {baseline * 1000:.1f} ms, words page {words * 1000:.1f} ms, "
            f"{words / baseline:.2f}x"
        )
    ratio = statistics.median(ratios)
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(f"target: a page of {SEGMENTS} segments' words ≤ {TARGET_RATIO}x a page of segments: {ratio:.2f}x, {verdict}")


if __name__ == "__main__":
    main()
