"""What the page says when a chat request failed: the failure's kind in the page's own words, and what to do.

The route's answer to every provider failure is a bare ``LLM provider error`` (the spec: no upstream text,
no secrets), so the page never quotes a provider; it words the :class:`~agent_app.errors.ErrorKind` the
handler raised instead.
"""

from __future__ import annotations

from agent_app.errors import ErrorKind
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.sidebar import SETTINGS_HELP

KEPT = "Your message is kept"
PROVIDER_WORDING: dict[ErrorKind, str] = {
    ErrorKind.PROVIDER_REJECTED_KEY: (
        "the model's service refused the API key (HTTP 401/403). Check `LLM_API_KEY` (and that it may use "
        f"`LLM_MODEL`), reload the page, then Retry. {KEPT}."
    ),
    ErrorKind.RATE_LIMITED: (
        f"the model's service is limiting requests (HTTP 429, rate limit or quota). Wait a minute, then Retry. {KEPT}."
    ),
    ErrorKind.TIMED_OUT: (
        "the model did not answer in time. It may just be slow: Retry, or raise `LLM_TIMEOUT_SECONDS` "
        f"(seconds per request). {KEPT}."
    ),
    ErrorKind.CONTEXT_TOO_LONG: (
        "the conversation is too long for the model's context window. Start a New chat, or ask about a "
        f"shorter part of the media. {KEPT}."
    ),
    ErrorKind.ANSWER_TOO_LONG: (
        "the model's answer ran too long and was cut (`LLM_MAX_STREAM_SECONDS`, `LLM_MAX_ANSWER_CHARS`). Retry, "
        f"or ask for a shorter answer. {KEPT}."
    ),
    ErrorKind.PROVIDER_FAILED: (
        f"the model's service failed (the server log says why). {KEPT}: Retry, and if it keeps failing check "
        "the `LLM_*` settings (base URL, model name, key)."
    ),
}
"""Each provider failure, after ``LLM provider error: ``."""
CONFIGURATION_KINDS = frozenset(
    {ErrorKind.MISSING_CONFIGURATION, ErrorKind.INVALID_CONFIGURATION, ErrorKind.UNKNOWN_PROVIDER}
)


def describe_chat_error(error: str, kind: ErrorKind | None) -> str:
    """The Markdown the page shows for the chat store's ``error`` of ``kind``."""
    if kind is not None and kind in PROVIDER_WORDING:
        return "LLM provider error: " + PROVIDER_WORDING[kind]
    if kind in CONFIGURATION_KINDS:
        return f"{escape_markdown(error)}. {SETTINGS_HELP}"
    return escape_markdown(error)
