"""Speaker turns kept in the transcript store beside the file's transcripts, under a key of their own (no
backend transcribes as ``speakers``, and its empty range is never a whole-media transcript), so every store
(the SQLite cache, the bucket) keeps them without an interface of their own.
"""

from __future__ import annotations

from agent_app.media.transcript_cache import CacheKey, TranscriptStore
from agent_app.media.transcript_types import SpeakerTurn, Transcript, TranscriptSegment, label_speakers

SPEAKERS_BACKEND = "speakers"
SPEAKERS_MODEL = "moonshine-diarization"


def _key(content_hash: str) -> CacheKey:
    return CacheKey(content_hash, SPEAKERS_BACKEND, SPEAKERS_MODEL, None, 0, 0)


def put_speaker_turns(store: TranscriptStore, content_hash: str, turns: list[SpeakerTurn]) -> None:
    """Keep the speaker turns found in this content (they hold for every transcript of it)."""
    segments = [TranscriptSegment(start_ms=t.start_ms, end_ms=t.end_ms, text="", speaker=t.speaker) for t in turns]
    end = max((t.end_ms for t in turns), default=0)
    store.put(
        _key(content_hash),
        Transcript(duration_ms=end, segments=segments, backend=SPEAKERS_BACKEND, model=SPEAKERS_MODEL),
    )


def speaker_turns(store: TranscriptStore, content_hash: str) -> list[SpeakerTurn] | None:
    """The speaker turns found in this content; ``None`` when speakers were never looked for."""
    kept = store.get(_key(content_hash))
    if kept is None or kept.backend != SPEAKERS_BACKEND:
        return None
    return [SpeakerTurn(start_ms=s.start_ms, end_ms=s.end_ms, speaker=s.speaker or "") for s in kept.segments]


def with_speakers(store: TranscriptStore, content_hash: str, transcript: Transcript) -> Transcript:
    """``transcript`` with its segments labelled by this content's speaker turns, when they were found."""
    turns = speaker_turns(store, content_hash)
    if turns is None:
        return transcript
    return transcript.model_copy(update={"segments": label_speakers(transcript.segments, turns)})
