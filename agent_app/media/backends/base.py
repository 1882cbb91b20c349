"""What every transcription backend is: a name, a model, and ``transcribe(audio) -> segments``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from agent_app.media.audio import AudioInput
from agent_app.media.encode import EncodedChunk, encoded_chunks
from agent_app.media.transcript_types import TranscriptSegment

BackendName = Literal["local", "moonshine", "openai", "gemini"]
ChunkProgress = Callable[[float], None]
"""``on_progress(fraction)`` of the backend's own work, 0..1."""


ChunkAnswer = tuple[list[TranscriptSegment], str | None]
"""One chunk's segments (on the media's timeline) and the language heard in it, when the service says."""


def fraction_done(audio: AudioInput, end_ms: int) -> float:
    """How far through ``audio`` a backend is once it has handled everything up to ``end_ms``."""
    span = max(1, audio.expected_end_ms - audio.start_ms)
    return min(1.0, max(0.0, (end_ms - audio.start_ms) / span))


class BackendUnavailableError(RuntimeError):
    """The configured backend cannot run: the message names the missing settings (never their values)."""


class BackendRequestError(RuntimeError):
    """A remote transcription service failed or answered something unusable (user-grade message)."""


@dataclass(frozen=True)
class BackendResult:
    """Segments on the media's timeline, the language the backend heard (``None`` if it cannot say) and the
    model that made them when the backend picks one per language (``None``: the backend's ``model``)."""

    segments: list[TranscriptSegment]
    language: str | None
    model: str | None = None


@dataclass(frozen=True)
class TranscribeSettings:
    """The resolved settings of one backend. ``missing`` names the settings a user still has to set."""

    backend: BackendName
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None

    def missing(self) -> list[str]:
        if self.backend in ("local", "moonshine"):
            return []
        names = []
        if not self.api_key:
            names.append("TRANSCRIBE_API_KEY")
        if not self.model:
            names.append("TRANSCRIBE_MODEL")
        return names


class TranscriptionBackend(Protocol):
    """A speech-to-text engine. ``name`` and ``model`` are part of the cache key."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        """Segments for ``audio`` with times on the media's timeline (each chunk's offset applied).
        Consumes ``audio`` once, piece by piece; a :class:`~agent_app.media.media_errors.MediaError` raised while
        decoding propagates."""
        ...


class ChunkedBackend:
    """A remote backend: the audio goes up in encoded chunks, one request each (``transcribe_chunk``), in
    order; each chunk's segments come back on the media's timeline."""

    name = ""

    def __init__(self, settings: TranscribeSettings, chunk_seconds: float) -> None:
        self.model = settings.model or ""
        self._chunk_seconds = chunk_seconds

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        segments: list[TranscriptSegment] = []
        heard: str | None = None
        for chunk in encoded_chunks(audio, self._chunk_seconds):
            chunk_segments, chunk_language = self.transcribe_chunk(chunk, language)
            segments.extend(chunk_segments)
            heard = heard or chunk_language
            on_progress(fraction_done(audio, chunk.offset_ms + chunk.duration_ms))
        return BackendResult(segments=segments, language=language or heard)

    def transcribe_chunk(self, chunk: EncodedChunk, language: str | None) -> ChunkAnswer:
        raise NotImplementedError
