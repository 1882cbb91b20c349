"""The ``openai`` backend: ``audio.transcriptions.create`` of the official SDK, against OpenAI or any
compatible server (speaches, faster-whisper-server, Groq, LocalAI) via ``TRANSCRIBE_BASE_URL``.

Audio goes up as Ogg/Opus in chunks of at most ten minutes (a few MB each, far under the 25 MB limit),
cut at quiet moments. Segment timestamps come from ``verbose_json``; models that only answer ``json``
(OpenAI's ``gpt-4o-*-transcribe``) give one segment per chunk, which still places the text in time.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import openai

from agent_app.media.backends.base import BackendRequestError, ChunkAnswer, ChunkedBackend, TranscribeSettings
from agent_app.media.encode import EncodedChunk
from agent_app.media.language import language_code
from agent_app.media.transcript_types import TranscriptSegment

CHUNK_SECONDS = 600.0
TIMEOUT_SECONDS = 300.0
_JSON_ONLY_PREFIXES = ("gpt-4o",)
"""OpenAI's newer transcription models reject ``verbose_json``; known up front to save a failing request."""


class OpenAITranscriptionBackend(ChunkedBackend):
    """Remote transcription through the OpenAI SDK."""

    name = "openai"

    def __init__(self, settings: TranscribeSettings, *, chunk_seconds: float = CHUNK_SECONDS) -> None:
        super().__init__(settings, chunk_seconds)
        self._host = urlsplit(settings.base_url).netloc if settings.base_url else "api.openai.com"
        self._client = openai.OpenAI(
            api_key=settings.api_key, base_url=settings.base_url, timeout=TIMEOUT_SECONDS, max_retries=2
        )
        self._verbose = not self.model.startswith(_JSON_ONLY_PREFIXES)

    def transcribe_chunk(self, chunk: EncodedChunk, language: str | None) -> ChunkAnswer:
        data, offset_ms, duration_ms = chunk.data, chunk.offset_ms, chunk.duration_ms
        extra: dict[str, Any] = {"language": language} if language else {}
        try:
            if self._verbose:
                try:
                    verbose = self._client.audio.transcriptions.create(
                        file=("audio.ogg", data, "audio/ogg"),
                        model=self.model,
                        response_format="verbose_json",
                        timestamp_granularities=["segment"],
                        **extra,
                    )
                    return _verbose_segments(verbose, offset_ms, duration_ms), _language_code(verbose.language)
                except openai.BadRequestError as exc:
                    if "response_format" not in str(exc) and "verbose_json" not in str(exc):
                        raise
                    self._verbose = False  # this model answers plain json only; remember for the next chunk
            plain = self._client.audio.transcriptions.create(
                file=("audio.ogg", data, "audio/ogg"), model=self.model, response_format="json", **extra
            )
        except openai.AuthenticationError as exc:
            raise BackendRequestError(
                f"the transcription service at {self._host} rejected the API key (TRANSCRIBE_API_KEY)"
            ) from exc
        except openai.NotFoundError as exc:
            raise BackendRequestError(
                f"the transcription service at {self._host} does not know the model {self.model!r} (TRANSCRIBE_MODEL)"
            ) from exc
        except openai.APIStatusError as exc:
            raise BackendRequestError(
                f"the transcription service at {self._host} answered HTTP {exc.status_code}: {_short(exc)}"
            ) from exc
        except openai.APIConnectionError as exc:
            raise BackendRequestError(f"the transcription service at {self._host} could not be reached") from exc
        text = (plain.text or "").strip()
        segments = [TranscriptSegment(start_ms=offset_ms, end_ms=offset_ms + duration_ms, text=text)] if text else []
        return segments, None


def _verbose_segments(response: Any, offset_ms: int, duration_ms: int) -> list[TranscriptSegment]:
    """Segments of a ``verbose_json`` answer on the media's timeline; servers that omit segments get one."""
    raw = getattr(response, "segments", None) or []
    segments = [
        TranscriptSegment(
            start_ms=offset_ms + round(float(seg.start) * 1000),
            end_ms=offset_ms + round(float(seg.end) * 1000),
            text=str(seg.text).strip(),
        )
        for seg in raw
        if str(getattr(seg, "text", "")).strip()
    ]
    text = str(getattr(response, "text", "") or "").strip()
    if not segments and text:
        segments = [TranscriptSegment(start_ms=offset_ms, end_ms=offset_ms + duration_ms, text=text)]
    return segments


def _language_code(name: str | None) -> str | None:
    """Whisper's ``verbose_json`` names the language in English words; the tool reports ISO 639-1 codes."""
    try:
        return language_code(name)
    except ValueError:
        return name.strip().lower() if name else None


def _short(exc: openai.APIStatusError) -> str:
    """The service's own error message, one line, bounded (it never contains our key)."""
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message or exc.message).split())[:200]
