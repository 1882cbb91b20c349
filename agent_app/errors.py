"""The typed failures of the chat path: every error from the route handler to a client carries a kind.

Why kinds and not texts: the wire answer is fixed by the spec (a bare ``LLM provider error`` for every
provider failure), yet the page must tell a rejected key from a rate limit or a slow model. The handler
raises :class:`ChatError` with an :class:`ErrorKind`; the HTTP edge turns the kind into a status, the page
into its own wording, and nobody compares message texts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    """Why a chat request failed. The HTTP status each kind is answered with is :attr:`http_status`."""

    INVALID_REQUEST = "invalid_request"
    """The body or the history is not one a provider accepts (400, naming the fields)."""
    REQUEST_TOO_LARGE = "request_too_large"
    """The HTTP body passed ``AGENT_MAX_BODY_BYTES`` (413)."""
    UNAUTHORIZED = "unauthorized"
    """``AGENT_API_TOKEN`` is set and the request did not carry it (401)."""
    FORBIDDEN = "forbidden"
    """Not a direct loopback client of ours, and no token configured (403)."""
    MISSING_CONFIGURATION = "missing_configuration"
    """Required ``LLM_*`` settings are unset (502 naming them)."""
    INVALID_CONFIGURATION = "invalid_configuration"
    """A setting cannot be used as it is (502 naming it, never its value)."""
    UNKNOWN_PROVIDER = "unknown_provider"
    """``LLM_PROVIDER`` names no adapter we have (502, the spec's text)."""
    TOOL_CONFIGURATION = "tool_configuration"
    """The enabled tools cannot be loaded (502 naming the problem)."""
    PROVIDER_REJECTED_KEY = "provider_rejected_key"
    """The provider answered 401/403: the key is wrong, revoked or not allowed this model."""
    RATE_LIMITED = "rate_limited"
    """The provider answered 429 (after the SDK's own retries)."""
    TIMED_OUT = "timed_out"
    """The provider did not answer within ``LLM_TIMEOUT_SECONDS``."""
    TOO_LARGE_FOR_MODEL = "too_large_for_model"
    """Even the least a request must carry (the instructions, the latest message or tool result) is larger than
    the model's context window: refused before sending (400 naming what is too large)."""
    CONTEXT_TOO_LONG = "context_too_long"
    """The conversation does not fit the model's context window (OpenAI ``context_length_exceeded``,
    Gemini's input-token-count 400)."""
    ANSWER_TOO_LONG = "answer_too_long"
    """The answer streamed past ``LLM_MAX_STREAM_SECONDS`` or ``LLM_MAX_ANSWER_CHARS`` (an endless or runaway
    stream): cut there, its text so far kept."""
    PROVIDER_FAILED = "provider_failed"
    """Any other provider failure: 5xx, an unreadable or empty answer, a refused request, the network."""
    UNREACHABLE = "unreachable"
    """An HTTP client could not reach the route, or could not read its answer (no HTTP status)."""
    SERVER_ERROR = "server_error"
    """An HTTP client got a 5xx it cannot tell apart (configuration or provider: the wire says only that)."""

    @property
    def http_status(self) -> int | None:
        """The route's status for this kind; ``None`` for the kinds only a client produces."""
        return _STATUS.get(self)

    @classmethod
    def for_status(cls, status: int) -> ErrorKind:
        """What an HTTP client can tell from a non-200 status alone."""
        return _KIND_OF_STATUS.get(status, cls.SERVER_ERROR)


_KIND_OF_STATUS: dict[int, ErrorKind] = {
    400: ErrorKind.INVALID_REQUEST,
    401: ErrorKind.UNAUTHORIZED,
    403: ErrorKind.FORBIDDEN,
    413: ErrorKind.REQUEST_TOO_LARGE,
}
_STATUS: dict[ErrorKind, int] = {
    **{kind: 502 for kind in ErrorKind if kind not in (ErrorKind.UNREACHABLE, ErrorKind.SERVER_ERROR)},
    **{kind: status for status, kind in _KIND_OF_STATUS.items()},
    ErrorKind.TOO_LARGE_FOR_MODEL: 400,
}

PROVIDER_ERROR = "LLM provider error"
"""The spec's whole wire answer to any provider failure: the cause goes to the server log only."""


class ChatError(Exception):
    """A chat request that failed, for a reason of kind ``kind``.

    The message is safe to show and to send (it never holds a secret or a provider's text: provider
    failures all say :data:`PROVIDER_ERROR`). ``details`` lists ``{field, message}`` problems of an
    invalid request. ``status`` is the HTTP status the route answered, when known. ``partial_text`` is the
    answer's text that had streamed in before a provider failure or a Stop (never an answer by itself).
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        details: list[dict[str, str]] | None = None,
        status: int | None = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.details = details
        self.status = status if status is not None else kind.http_status
        self.partial_text = partial_text

    @property
    def message(self) -> str:
        return str(self)

    def wire_body(self) -> dict[str, Any]:
        """The route's JSON body for this error: ``{"error": ...}`` plus ``details`` for a 400."""
        body: dict[str, Any] = {"error": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


def provider_failure(kind: ErrorKind, partial_text: str = "") -> ChatError:
    """The error every provider failure becomes: its kind, and the spec's bare text."""
    return ChatError(kind, PROVIDER_ERROR, partial_text=partial_text)
