"""Transcript exports: SubRip (``.srt``), WebVTT (``.vtt``) and plain text.

Hand-written because both formats are a dozen well-specified lines and the app needs only writing
(the tests parse the output with the independent ``srt`` and ``webvtt-py`` libraries). Cue text is
sanitized: a blank line would end a cue early, and in WebVTT ``-->`` and ``<``/``&`` have meaning.
"""

from __future__ import annotations

from agent_app.clock import clock_text
from agent_app.media.transcript_types import Transcript, TranscriptSegment

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
            cues.append(TranscriptSegment(start_ms=segment.start_ms, end_ms=end, text=text))
    return cues


def to_srt(transcript: Transcript) -> str:
    """The transcript as a SubRip file: numbered cues, ``HH:MM:SS,mmm`` times."""
    blocks = [
        f"{index}\n{_timestamp(cue.start_ms, ',')} --> {_timestamp(cue.end_ms, ',')}\n{cue.text.replace('-->', '->')}\n"
        for index, cue in enumerate(_cues(transcript), start=1)
    ]
    return "\n".join(blocks)


def _vtt_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_vtt(transcript: Transcript) -> str:
    """The transcript as a WebVTT file: ``WEBVTT`` header, ``HH:MM:SS.mmm`` times, escaped text."""
    blocks = [
        f"{_timestamp(cue.start_ms, '.')} --> {_timestamp(cue.end_ms, '.')}\n{_vtt_text(cue.text)}\n"
        for cue in _cues(transcript)
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def to_text(transcript: Transcript) -> str:
    """Plain text, one segment per line."""
    return "".join(f"{cue.text}\n" for cue in _cues(transcript))
