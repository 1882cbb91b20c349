"""Media work: audio extraction (PyAV), transcription backends, the transcript cache, subtitle export.

What a tool plugin or the page uses is exported here and nowhere else; the modules behind it may change shape.
"""

from agent_app.media.audio_probe import has_audio_stream
from agent_app.media.language import language_code
from agent_app.media.speakers import find_speakers
from agent_app.media.subtitles import to_json, to_srt, to_text, to_vtt, to_vtt_words
from agent_app.media.transcriber import TranscriptionError, TranscriptionRequest, transcribe_asset
from agent_app.media.transcript_cache import saved_transcript
from agent_app.media.transcript_edit import edited_transcript, saved_edited_transcript
from agent_app.media.transcript_types import SpeakerTurn, Transcript, TranscriptSegment, TranscriptWord

__all__ = [
    "SpeakerTurn",
    "Transcript",
    "TranscriptSegment",
    "TranscriptWord",
    "TranscriptionError",
    "TranscriptionRequest",
    "edited_transcript",
    "find_speakers",
    "has_audio_stream",
    "language_code",
    "saved_edited_transcript",
    "saved_transcript",
    "to_json",
    "to_srt",
    "to_text",
    "to_vtt",
    "to_vtt_words",
    "transcribe_asset",
]
