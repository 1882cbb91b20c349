"""The model the route talks to: ``LLM_*`` settings read server side (Streamlit secrets, then environment).

Why a module of its own: the route, the page's status line and the adapters' cache all need the same
reading of the same settings, and the same rule that a key is never shown. :class:`LLMConfig` hides the
key from ``repr``; errors name a *setting*, never its value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_app.settings import read_float, read_int, read_setting, read_str

OPENAI_COMPATIBLE = "openai-compatible"
GEMINI = "gemini"
PROVIDERS: tuple[str, ...] = (OPENAI_COMPATIBLE, GEMINI)

REQUIRED_SETTINGS: tuple[str, ...] = ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY")
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_RETRY_BACKOFF_SECONDS = 0.5


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
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    retry_backoff_seconds: float = DEFAULT_RETRY_BACKOFF_SECONDS
    gemini_base_url: str | None = None
    """google-genai's own override, env ``GOOGLE_GEMINI_BASE_URL`` (proxies, tests): part of the
    configuration so a changed value gets a new client; ``LLM_BASE_URL`` never reaches Gemini."""
    context_tokens: int | None = None
    """``LLM_CONTEXT_TOKENS``: the model's whole context window, overriding the table of known models."""
    max_output_tokens: int | None = None
    """``LLM_MAX_OUTPUT_TOKENS``: tokens of the window kept for the answer (default: a share of it)."""


MAX_TIMEOUT_SECONDS = 86_400.0
"""A day: past this a socket timeout overflows the platform's ``time_t`` and every send fails."""


def _timeout_seconds() -> float:
    value = read_float("LLM_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
    if not (0 < value <= MAX_TIMEOUT_SECONDS):  # also false for NaN
        raise LLMConfigurationError("Setting LLM_TIMEOUT_SECONDS must be a positive number of seconds, at most a day")
    return value


def _max_retries() -> int:
    raw = read_setting("LLM_MAX_RETRIES")
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):  # TOML ``true`` / ``2.5``
        raise LLMConfigurationError("Setting LLM_MAX_RETRIES must be an integer")
    retries = read_int("LLM_MAX_RETRIES", DEFAULT_MAX_RETRIES)
    if retries < 0:
        raise LLMConfigurationError("Setting LLM_MAX_RETRIES must not be negative")
    return retries


def _retry_backoff_seconds() -> float:
    backoff = read_float("LLM_RETRY_BACKOFF_SECONDS", DEFAULT_RETRY_BACKOFF_SECONDS)
    if not (backoff >= 0 and math.isfinite(backoff)):  # NaN and infinity are not delays an SDK can use
        raise LLMConfigurationError("Setting LLM_RETRY_BACKOFF_SECONDS must be a finite number, 0 or more")
    return backoff


def _token_count(name: str) -> int | None:
    """An optional whole, positive number of tokens (``None`` when unset)."""
    raw = read_setting(name)
    if raw is None:
        return None
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):  # TOML ``true`` / ``2.5``
        raise LLMConfigurationError(f"Setting {name} must be a whole number of tokens")
    value = read_int(name, 0)
    if value < 1:
        raise LLMConfigurationError(f"Setting {name} must be a positive number of tokens")
    return value


def _context_tokens() -> int | None:
    return _token_count("LLM_CONTEXT_TOKENS")


def _max_output_tokens() -> int | None:
    return _token_count("LLM_MAX_OUTPUT_TOKENS")


_TUNING_READERS: tuple[Callable[[], float | None], ...] = (
    _timeout_seconds,
    _max_retries,
    _retry_backoff_seconds,
    _context_tokens,
    _max_output_tokens,
)


def tuning_problems() -> list[str]:
    """Every invalid timeout/retry setting, by name (never the value), checked whether or not the
    required settings are there: the page names all that needs fixing at once, before any send."""
    problems: list[str] = []
    for reader in _TUNING_READERS:
        try:
            reader()
        except (ValueError, LLMConfigurationError) as exc:  # both messages name the setting only
            problems.append(str(exc))
    return problems


def load_llm_config() -> LLMConfig:
    """The current configuration.

    Raises :class:`MissingConfigurationError` naming every unset required setting, and
    :class:`LLMConfigurationError` for an unparsable or out-of-range timeout/retry setting. The provider
    name is not checked here: the factory does that, with the spec's ``Unknown LLM provider`` message.
    ``LLM_BASE_URL`` is dropped for Gemini (the spec: it must be ignored).
    """
    values = {name: read_str(name) for name in REQUIRED_SETTINGS}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise MissingConfigurationError(missing)
    provider = str(values["LLM_PROVIDER"]).lower()
    try:
        timeout = _timeout_seconds()
        retries = _max_retries()
        backoff = _retry_backoff_seconds()
        context_tokens = _context_tokens()
        max_output_tokens = _max_output_tokens()
    except ValueError as exc:  # settings' messages name the setting only
        raise LLMConfigurationError(str(exc)) from None
    return LLMConfig(
        provider=provider,
        model=str(values["LLM_MODEL"]),
        api_key=str(values["LLM_API_KEY"]),
        base_url=read_str("LLM_BASE_URL") if provider == OPENAI_COMPATIBLE else None,
        timeout_seconds=timeout,
        max_retries=retries,
        retry_backoff_seconds=backoff,
        gemini_base_url=(os.environ.get("GOOGLE_GEMINI_BASE_URL") or None) if provider == GEMINI else None,
        context_tokens=context_tokens,
        max_output_tokens=max_output_tokens,
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


def llm_status() -> LLMStatus:
    """The configuration's state for display: configured, or which settings are missing / wrong. An
    invalid timeout/retry setting is reported even when required settings are missing too, so that
    the page never says "configured" (or names only half the fixes) before a send fails."""
    provider = read_str("LLM_PROVIDER")
    model = read_str("LLM_MODEL")
    invalid = tuning_problems()
    try:
        config = load_llm_config()
    except MissingConfigurationError as exc:
        return LLMStatus(False, provider, model, "; ".join([str(exc), *invalid]), tuple(exc.missing), tuple(invalid))
    except LLMConfigurationError as exc:
        return LLMStatus(False, provider, model, "; ".join(invalid) or str(exc), invalid=tuple(invalid))
    if config.provider not in PROVIDERS:
        return LLMStatus(False, config.provider, config.model, str(UnknownProviderError(config.provider)))
    return LLMStatus(True, config.provider, config.model)
