"""Which transcription backend runs, from the ``TRANSCRIBE_*`` settings with ``LLM_*`` fallbacks.

The remote backends reuse the assistant's credentials when they talk to the same provider
(``openai`` ↔ ``LLM_PROVIDER=openai-compatible``, ``gemini`` ↔ ``LLM_PROVIDER=gemini``), so a user with one
key configures nothing twice. ``LLM_BASE_URL`` is never used for Gemini (the spec ignores it there);
``TRANSCRIBE_BASE_URL`` is honoured for both, for proxies and self-hosted servers.
"""

from __future__ import annotations

from agent_app.media.backends.base import BackendName, BackendUnavailableError, TranscribeSettings, TranscriptionBackend
from agent_app.settings import Settings

DEFAULT_OPENAI_MODEL = "whisper-1"
"""Only assumed for OpenAI itself: compatible servers name their models differently."""

_PROVIDER_OF: dict[str, str] = {"openai": "openai-compatible", "gemini": "gemini"}


def read_transcribe_settings(settings: Settings) -> TranscribeSettings:
    """The backend's part of ``settings`` (those of the run or page session that transcribes, so a changed
    secret applies to the next one without a restart)."""
    problems = settings.problems_with("TRANSCRIBE_BACKEND")
    if problems:
        raise BackendUnavailableError(problems[0])
    backend: BackendName = settings.transcribe_backend
    if backend in ("local", "moonshine"):
        return TranscribeSettings(backend=backend, model=settings.transcribe_model if backend == "local" else None)
    shares_llm = settings.llm_provider == _PROVIDER_OF[backend]
    api_key = settings.transcribe_api_key or (settings.llm_api_key if shares_llm else None)
    base_url = settings.transcribe_base_url
    if backend == "openai" and base_url is None and shares_llm:
        base_url = settings.llm_base_url
    model = settings.transcribe_model
    if model is None and backend == "openai" and base_url is None:
        model = DEFAULT_OPENAI_MODEL
    if model is None and backend == "gemini" and shares_llm:
        model = settings.llm_model
    return TranscribeSettings(backend=backend, model=model, api_key=api_key, base_url=base_url)


def create_backend(settings: TranscribeSettings) -> TranscriptionBackend:
    """The backend the settings choose; :class:`BackendUnavailableError` naming what is missing."""
    missing = settings.missing()
    if missing:
        hint = " (or LLM_* settings of the same provider)"
        raise BackendUnavailableError(
            f"The {settings.backend} transcription backend is not configured: set {' and '.join(missing)}{hint}"
        )
    if settings.backend == "openai":
        from agent_app.media.backends.openai_api import OpenAITranscriptionBackend

        return OpenAITranscriptionBackend(settings)
    if settings.backend == "gemini":
        from agent_app.media.backends.gemini_api import GeminiTranscriptionBackend

        return GeminiTranscriptionBackend(settings)
    if settings.backend == "moonshine":
        from agent_app.media.backends.local_moonshine import LocalMoonshineBackend

        return LocalMoonshineBackend()
    from agent_app.media.backends.local_whisper import LocalWhisperBackend

    return LocalWhisperBackend(settings)
