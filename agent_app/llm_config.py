"""The model the route talks to: the ``LLM_*`` part of the :class:`~agent_app.settings.Settings`.

Why a module of its own: the route, the page's status line and the adapters' cache all need the same
view of the same settings, and the same rule that a key is never shown. :class:`LLMConfig` hides the
key from ``repr``; errors name a *setting*, never its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_app.settings import Settings

OPENAI_COMPATIBLE = "openai-compatible"
GEMINI = "gemini"
PROVIDERS: tuple[str, ...] = (OPENAI_COMPATIBLE, GEMINI)


class LLMConfigurationError(Exception):
    """The LLM settings cannot be used as they are; the message names settings, never values."""


class MissingConfigurationError(LLMConfigurationError):
    """Required settings are unset. ``missing`` lists their names in a stable order."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(f"Missing LLM configuration: {', '.join(missing)}")
        self.missing = missing


class UnknownProviderError(LLMConfigurationError):
    """``LLM_PROVIDER`` names no adapter we have (the spec's exact message)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown LLM provider: {name}")
        self.provider = name


@dataclass(frozen=True)
class LLMConfig:
    """One complete configuration. Frozen and hashable: it is the key of the adapter cache, so a
    changed setting yields a new adapter while an unchanged one reuses its SDK client."""

    provider: str
    model: str
    api_key: str = field(repr=False)
    base_url: str | None = None
    timeout_seconds: float = 60.0
    max_retries: int = 2
    retry_backoff_seconds: float = 0.5
    gemini_base_url: str | None = None
    """google-genai's own override, env ``GOOGLE_GEMINI_BASE_URL`` (proxies, tests): part of the
    configuration so a changed value gets a new client; ``LLM_BASE_URL`` never reaches Gemini."""
    context_tokens: int | None = None
    """``LLM_CONTEXT_TOKENS``: the model's whole context window, overriding the table of known models."""
    max_output_tokens: int | None = None
    """``LLM_MAX_OUTPUT_TOKENS``: tokens of the window kept for the answer (default: a share of it)."""


_TUNING_SETTINGS = (
    "LLM_TIMEOUT_SECONDS",
    "LLM_MAX_RETRIES",
    "LLM_RETRY_BACKOFF_SECONDS",
    "LLM_MAX_STREAM_SECONDS",
    "LLM_MAX_ANSWER_CHARS",
    "LLM_CONTEXT_TOKENS",
    "LLM_MAX_OUTPUT_TOKENS",
)


def load_llm_config(settings: Settings) -> LLMConfig:
    """The configuration ``settings`` describe.

    Raises :class:`MissingConfigurationError` naming every unset required setting, and
    :class:`LLMConfigurationError` for an unusable timeout/retry/token setting. The provider name is not
    checked here: the factory does that, with the spec's ``Unknown LLM provider`` message.
    ``LLM_BASE_URL`` is dropped for Gemini (the spec: it must be ignored).
    """
    required = {
        "LLM_PROVIDER": settings.llm_provider,
        "LLM_MODEL": settings.llm_model,
        "LLM_API_KEY": settings.llm_api_key,
    }
    missing = [name for name, value in required.items() if value is None]
    if missing:
        raise MissingConfigurationError(missing)
    invalid = settings.problems_with(*_TUNING_SETTINGS)
    if invalid:
        raise LLMConfigurationError("; ".join(invalid))
    provider = str(settings.llm_provider)
    return LLMConfig(
        provider=provider,
        model=str(settings.llm_model),
        api_key=str(settings.llm_api_key),
        base_url=settings.llm_base_url if provider == OPENAI_COMPATIBLE else None,
        timeout_seconds=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
        retry_backoff_seconds=settings.llm_retry_backoff_seconds,
        gemini_base_url=settings.gemini_base_url if provider == GEMINI else None,
        context_tokens=settings.llm_context_tokens,
        max_output_tokens=settings.llm_max_output_tokens,
    )


@dataclass(frozen=True)
class LLMStatus:
    """What the page may show about the model: never the key, never a base URL's credentials."""

    configured: bool
    provider: str | None
    model: str | None
    problem: str | None = None
    missing: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    """One message per invalid timeout/retry setting, each naming the setting (never a secret)."""

    @property
    def summary(self) -> str:
        """One line for a status badge, e.g. ``gemini · gemini-2.5-flash · configured``."""
        parts = [self.provider or "no provider", self.model or "no model"]
        parts.append("configured" if self.configured else (self.problem or "not configured"))
        return " · ".join(parts)


def llm_status(settings: Settings) -> LLMStatus:
    """The configuration's state for display: configured, or which settings are missing / wrong. An
    invalid timeout/retry setting is reported even when required settings are missing too, so that
    the page never says "configured" (or names only half the fixes) before a send fails."""
    provider, model = settings.llm_provider, settings.llm_model
    invalid = settings.problems_with(*_TUNING_SETTINGS)
    try:
        config = load_llm_config(settings)
    except MissingConfigurationError as exc:
        return LLMStatus(False, provider, model, "; ".join([str(exc), *invalid]), tuple(exc.missing), tuple(invalid))
    except LLMConfigurationError as exc:
        return LLMStatus(False, provider, model, str(exc), invalid=tuple(invalid))
    if config.provider not in PROVIDERS:
        return LLMStatus(False, config.provider, config.model, str(UnknownProviderError(config.provider)))
    return LLMStatus(True, config.provider, config.model)
