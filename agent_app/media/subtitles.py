"""Transcript exports: SubRip (``.srt``), WebVTT (``.vtt``, also with word timings inside cues), plain text,
and JSON (segments with their words, the language and how the transcript was made). A known speaker is
a WebVTT voice tag (``<v Ana>``) and ``Ana: `` before the text in SubRip and plain text.

Hand-written because both formats are a dozen well-specified lines and the app needs only writing
(the tests parse the output with the independent ``srt`` and ``webvtt-py`` libraries). Cue text is
sanitized: a blank line would end a cue early, and in WebVTT ``-->`` and ``<``/``&`` have meaning.
"""

from __future__ import annotations

import json

from agent_app.clock import clock_text
from agent_app.media.transcript_types import Transcript, TranscriptSegment, clamp_words

_MIN_CUE_MS = 1
"""Players drop zero-length cues; a segment reported as an instant still shows for a moment."""


def _timestamp(ms: int, separator: str) -> str:
    return clock_text(ms, millis=separator, hour_digits=2)


def _cues(transcript: Transcript) -> list[TranscriptSegment]:
    cues = []
    for segment in transcript.segments:
        text = " ".join(segment.text.split())
        if text:
            end = max(segment.end_ms, segment.start_ms + _MIN_CUE_MS)
            words = clamp_words(segment.words, segment.start_ms, end)
            cues.append(segment.model_copy(update={"end_ms": end, "text": text, "words": words}))
    return cues


def _speaker(transcript: Transcript, cue: TranscriptSegment) -> str | None:
    """The cue's speaker as shown (the user's name, else ``S1``…), on one line and without markup."""
    name = transcript.speaker_name(cue.speaker)
    return " ".join(name.replace("-->", "->").split()) if name else None


def _said_by(transcript: Transcript, cue: TranscriptSegment) -> str:
    """The cue's text, after ``Name: `` when its speaker is known (SubRip and plain text have no voice tag)."""
    speaker = _speaker(transcript, cue)
    return f"{speaker}: {cue.text}" if speaker else cue.text


def _voice(transcript: Transcript, cue: TranscriptSegment, body: str) -> str:
    """``body`` inside a WebVTT voice tag (``<v Name>``) when the cue's speaker is known."""
    speaker = _speaker(transcript, cue)
    return f"<v {_vtt_text(speaker)}>{body}" if speaker else body


def to_srt(transcript: Transcript) -> str:
    """The transcript as a SubRip file: numbered cues, ``HH:MM:SS,mmm`` times."""
    blocks = [
        f"{index}\n{_timestamp(cue.start_ms, ',')} --> {_timestamp(cue.end_ms, ',')}\n"
        f"{_said_by(transcript, cue).replace('-->', '->')}\n"
        for index, cue in enumerate(_cues(transcript), start=1)
    ]
    return "\n".join(blocks)


def _vtt_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_vtt(transcript: Transcript) -> str:
    """The transcript as a WebVTT file: ``WEBVTT`` header, ``HH:MM:SS.mmm`` times, escaped text."""
    blocks = [
        f"{_timestamp(cue.start_ms, '.')} --> {_timestamp(cue.end_ms, '.')}\n"
        f"{_voice(transcript, cue, _vtt_text(cue.text))}\n"
        for cue in _cues(transcript)
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def _timed_words(cue: TranscriptSegment) -> str:
    """The cue's words, each after the first preceded by its start as a WebVTT timestamp tag (players and
    karaoke styling read them); a tag never precedes the cue's start, so the cue stays valid."""
    parts: list[str] = []
    for word in cue.words:
        text = _vtt_text(word.text)
        tagged = parts and word.start_ms > cue.start_ms
        parts.append(f"<{_timestamp(word.start_ms, '.')}>{text}" if tagged else text)
    return " ".join(parts)


def to_vtt_words(transcript: Transcript) -> str:
    """WebVTT whose cues carry each word's start inside them (``<00:00:01.320>word``); a segment without
    timed words is written as plain cue text."""
    blocks = [
        f"{_timestamp(cue.start_ms, '.')} --> {_timestamp(cue.end_ms, '.')}\n"
        f"{_voice(transcript, cue, _timed_words(cue) if cue.words else _vtt_text(cue.text))}\n"
        for cue in _cues(transcript)
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def to_json(transcript: Transcript) -> str:
    """The whole transcript as JSON: language, backend, model, duration and the segments with their words
    (camelCase, times in milliseconds), for editors and scripts."""
    body = {
        "language": transcript.language,
        "durationMs": transcript.duration_ms,
        "backend": transcript.backend,
        "model": transcript.model,
        "speakers": transcript.speaker_names,
        "segments": [cue.model_dump(mode="json", by_alias=True, exclude_none=True) for cue in _cues(transcript)],
    }
    return json.dumps(body, ensure_ascii=False, indent=1) + "\n"


def to_text(transcript: Transcript) -> str:
    """Plain text, one segment per line."""
    return "".join(f"{_said_by(transcript, cue)}\n" for cue in _cues(transcript))
