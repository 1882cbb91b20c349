"""A transcript with the user's edits applied: corrected segment texts (their word times carried over to the
new words) and the speakers' names. What the page shows, the exports write and the assistant is given.
"""

from __future__ import annotations

import difflib

from agent_app.media.transcript_cache import saved_transcript
from agent_app.media.transcript_types import Transcript, TranscriptSegment, TranscriptWord
from agent_app.transcript_edits import TranscriptEdits
from agent_app.types import MediaLibrary


def saved_edited_transcript(media: MediaLibrary, asset_id: str) -> Transcript | None:
    """The asset's cached whole-media transcript with the user's edits, or ``None`` (see ``saved_transcript``)."""
    transcript = saved_transcript(media, asset_id)
    return edited_transcript(transcript, media.transcript_edits(asset_id)) if transcript is not None else None


def edited_transcript(transcript: Transcript, edits: TranscriptEdits) -> Transcript:
    """``transcript`` with each correction applied where its segment (same start, same machine text) still
    is, and the speaker names known; a correction of a segment no longer there is left out."""
    if not edits.corrections and not edits.speaker_names:
        return transcript
    corrections = {correction.start_ms: correction for correction in edits.corrections}
    segments = []
    for segment in transcript.segments:
        correction = corrections.get(segment.start_ms)
        applies = correction is not None and correction.original == segment.text and correction.text != segment.text
        segments.append(corrected_segment(segment, correction.text) if applies and correction else segment)
    labels = {segment.speaker for segment in segments if segment.speaker}
    names = {label: name for label, name in edits.speaker_names.items() if label in labels and name}
    return transcript.model_copy(update={"segments": segments, "speaker_names": names})


def corrected_segment(segment: TranscriptSegment, text: str) -> TranscriptSegment:
    """``segment`` saying ``text``, its machine text kept as ``original_text`` and its word times spread
    over the new words (see :func:`respread_words`)."""
    return segment.model_copy(
        update={
            "text": text,
            "original_text": segment.original_text or segment.text,
            "words": respread_words(segment.words, text.split()) if segment.words else [],
        }
    )


def respread_words(words: list[TranscriptWord], new: list[str]) -> list[TranscriptWord]:
    """Times for the ``new`` words: a word the correction kept keeps its time; each run of changed words
    shares the time between the kept words around it, in proportion to its words' lengths."""
    if not new:
        return []
    matcher = difflib.SequenceMatcher(None, [w.text.lower() for w in words], [w.lower() for w in new], autojunk=False)
    timed: list[TranscriptWord | None] = [None] * len(new)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            old = words[block.a + offset]
            text = new[block.b + offset]
            timed[block.b + offset] = TranscriptWord(start_ms=old.start_ms, end_ms=old.end_ms, text=text)
    result: list[TranscriptWord] = []
    index = 0
    while index < len(new):
        kept = timed[index]
        if kept is not None:
            result.append(kept)
            index += 1
            continue
        run_end = index
        while run_end < len(new) and timed[run_end] is None:
            run_end += 1
        begin = result[-1].end_ms if result else words[0].start_ms
        following = timed[run_end] if run_end < len(new) else None
        finish = following.start_ms if following is not None else words[-1].end_ms
        result.extend(_spread(new[index:run_end], begin, max(begin, finish)))
        index = run_end
    return result


def _spread(texts: list[str], start_ms: int, end_ms: int) -> list[TranscriptWord]:
    """``texts`` laid end to end over ``[start_ms, end_ms]``, each as long as its share of the characters."""
    total = sum(len(text) for text in texts) or 1
    span = end_ms - start_ms
    spread = []
    used = 0
    for text in texts:
        begin = start_ms + span * used // total
        used += len(text)
        spread.append(TranscriptWord(start_ms=begin, end_ms=start_ms + span * used // total, text=text))
    return spread
