"""What every transcription backend is: a name, a model, and ``transcribe(clip) -> segments``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent_app.media.audio import AudioClip
from agent_app.media.transcript import TranscriptSegment

ChunkProgress = Callable[[float], None]
"""``on_progress(fraction)`` of the backend's own work, 0..1."""


class BackendUnavailableError(RuntimeError):
    """The configured backend cannot run: the message names the missing settings (never their values)."""


class BackendRequestError(RuntimeError):
    """A remote transcription service failed or answered something unusable (user-grade message)."""


@dataclass(frozen=True)
class BackendResult:
    """Segments on the media's timeline and the language the backend heard (``None`` if it cannot say)."""

    segments: list[TranscriptSegment]
    language: str | None


class TranscriptionBackend(Protocol):
    """A speech-to-text engine. ``name`` and ``model`` are part of the cache key."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def transcribe(self, clip: AudioClip, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        """Segments for ``clip`` with times on the media's timeline (``clip.start_ms`` offset applied)."""
        ...
