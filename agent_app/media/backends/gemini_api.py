"""The ``gemini`` backend: the audio goes inline to ``generate_content`` with a response schema, so the
model answers timestamped segments as JSON instead of prose we would have to parse.

Gemini has no transcription endpoint; a multimodal model with a strict schema is the documented way.
Chunks of at most ten minutes keep each request far under the inline-data limit (20 MB) and keep the
model's timestamps reliable (they drift on very long inputs). Times are asked for in seconds from the
start of the chunk and shifted onto the media's timeline here.
"""

from __future__ import annotations

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel, Field, ValidationError

from agent_app.media.backends.base import BackendRequestError, ChunkAnswer, ChunkedBackend, TranscribeSettings
from agent_app.media.encode import OGG_MIME_TYPE, EncodedChunk
from agent_app.media.transcript_types import TranscriptSegment

CHUNK_SECONDS = 600.0
TIMEOUT_MS = 300_000
RETRY_ATTEMPTS = 3

PROMPT = (
    "Transcribe the speech in this audio verbatim, in the language spoken. Split it into segments of one "
    "sentence or short phrase each, with startSeconds and endSeconds measured from the beginning of this "
    "audio. Report the spoken language as an ISO 639-1 code. If there is no speech, return no segments."
)


class GeminiSegment(BaseModel):
    """One segment as the model is asked to produce it (the response schema)."""

    start_seconds: float = Field(alias="startSeconds", ge=0)
    end_seconds: float = Field(alias="endSeconds", ge=0)
    text: str


class GeminiTranscript(BaseModel):
    """The whole answer for one chunk (the response schema)."""

    language: str = ""
    segments: list[GeminiSegment] = Field(default_factory=list)


class GeminiTranscriptionBackend(ChunkedBackend):
    """Remote transcription through the Google GenAI SDK."""

    name = "gemini"

    def __init__(self, settings: TranscribeSettings, *, retry_delay_s: float = 1.0) -> None:
        super().__init__(settings, CHUNK_SECONDS)
        # 429 and 5xx are retried with exponential backoff: a long file is many requests, and one busy
        # moment of the service should not throw away the chunks already transcribed.
        retry = types.HttpRetryOptions(
            attempts=RETRY_ATTEMPTS, initial_delay=retry_delay_s, max_delay=retry_delay_s * 16, jitter=retry_delay_s
        )
        options = types.HttpOptions(timeout=TIMEOUT_MS, base_url=settings.base_url, retry_options=retry)
        self._client = genai.Client(api_key=settings.api_key, http_options=options)

    def transcribe_chunk(self, chunk: EncodedChunk, language: str | None) -> ChunkAnswer:
        answer = self._ask(chunk.data, language)
        segments = []
        for seg in answer.segments:
            start = chunk.offset_ms + round(seg.start_seconds * 1000)
            end = chunk.offset_ms + round(min(seg.end_seconds, chunk.duration_ms / 1000) * 1000)
            segments.append(TranscriptSegment(start_ms=start, end_ms=max(start, end), text=seg.text.strip()))
        return segments, answer.language.strip().lower() or None

    def _ask(self, data: bytes, language: str | None) -> GeminiTranscript:
        prompt = PROMPT + (f" The speech is in the language with code {language!r}." if language else "")
        config = types.GenerateContentConfig(
            temperature=0.0,
            response_mime_type="application/json",
            response_schema=GeminiTranscript,
        )
        contents = [
            types.Content(
                role="user",
                parts=[types.Part.from_bytes(data=data, mime_type=OGG_MIME_TYPE), types.Part.from_text(text=prompt)],
            )
        ]
        try:
            response = self._client.models.generate_content(model=self.model, contents=contents, config=config)
        except genai_errors.APIError as exc:
            raise BackendRequestError(_describe_error(exc, self.model)) from exc
        except httpx.HTTPError as exc:
            raise BackendRequestError("the Gemini API could not be reached") from exc
        text = response.text or ""
        try:
            return GeminiTranscript.model_validate_json(text)
        except ValidationError as exc:
            raise BackendRequestError(
                "Gemini answered something that is not a transcript in the requested format"
            ) from exc


def _describe_error(exc: genai_errors.APIError, model: str) -> str:
    if exc.code in (401, 403):
        return "the Gemini API rejected the API key (TRANSCRIBE_API_KEY)"
    if exc.code == 404:
        return f"the Gemini API does not know the model {model!r} (TRANSCRIBE_MODEL)"
    message = " ".join(str(exc.message or exc.status or "").split())[:200]
    return f"the Gemini API answered HTTP {exc.code}: {message}"
