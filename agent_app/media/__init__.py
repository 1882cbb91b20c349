"""Media work: audio extraction (PyAV), transcription backends, the transcript cache, subtitle export.

What a tool plugin or the page uses is exported here and nowhere else; the modules behind it may change shape.
"""

from agent_app.media.language import language_code
from agent_app.media.subtitles import to_json, to_srt, to_text, to_vtt, to_vtt_words
from agent_app.media.transcriber import TranscriptionError, TranscriptionRequest, transcribe_asset
from agent_app.media.transcript_cache import saved_transcript
from agent_app.media.transcript_types import Transcript, TranscriptSegment, TranscriptWord

__all__ = [
    "Transcript",
    "TranscriptSegment",
    "TranscriptWord",
    "TranscriptionError",
    "TranscriptionRequest",
    "language_code",
    "saved_transcript",
    "to_json",
    "to_srt",
    "to_text",
    "to_vtt",
    "to_vtt_words",
    "transcribe_asset",
]
