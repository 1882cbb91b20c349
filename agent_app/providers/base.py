"""The provider adapter interface: one streamed request, ``stream(messages, *, system_prompt, tool_schemas,
on_text)``, in the shared types (:class:`~agent_app.types.ChatMessage` in, :class:`~agent_app.types.ChatResponse` out).

Why: the handler must not know any provider's wire format, and every provider must look the same to it.
An adapter converts our history and internal tool schemas to its SDK's request, and the SDK's answer
back to a ``ChatResponse``; any failure becomes :class:`ProviderError` with an
:class:`~agent_app.errors.ErrorKind`, whose message is safe to log (secrets removed) and is never shown to
the caller (the route answers a fixed text, the page words the kind).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from agent_app import log_redaction
from agent_app.errors import ErrorKind
from agent_app.providers.provider_loop import PacedTextSink
from agent_app.types import ChatMessage, ChatResponse, ToolSchema


class ProviderError(Exception):
    """The provider could not give a usable answer (network, auth, rate limit, 5xx, timeout, unreadable
    or empty response). The message describes the cause for the server log, with secrets removed; ``kind``
    says which failure it was."""

    def __init__(self, cause: str, kind: ErrorKind = ErrorKind.PROVIDER_FAILED, *, partial_text: str = "") -> None:
        super().__init__(cause)
        self.kind = kind
        self.partial_text = partial_text
        """The answer's text that had streamed in before the failure (never an answer by itself)."""


class ProviderAdapter(ABC):
    """A provider behind our types. Instances are cached per configuration and shared between threads,
    so a request keeps no per-call state on ``self``.

    An adapter implements one coroutine, :meth:`stream`, which always streams, on its SDK's async client
    (one per event loop: an async client's connections belong to the loop that opened them). The chat
    handler awaits it on the route's loop, or on a run's thread's own loop
    (:mod:`agent_app.providers.provider_loop`), where Stop cancels it.
    """

    name: str

    @abstractmethod
    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        system_prompt: str,
        tool_schemas: Sequence[ToolSchema],
        on_text: PacedTextSink,
    ) -> ChatResponse:
        """One model request, streamed: ``on_text`` gets each piece of the answer's text as it arrives, the
        return value is the whole answer. Raise :class:`ProviderError` (with the text so far) on any
        failure. ``tool_calls`` of the answer is ``None`` (not ``[]``) when the model asked for no tool;
        ``provider_metadata`` is what the adapter needs back on the next request (the orchestrator stores it
        on the assistant message); ``usage`` is the provider's token count, when it sent one."""


def _is_timeout(exc: BaseException) -> bool:
    """A timeout of any HTTP stack an SDK uses (httpx, httpx2, the stdlib), whatever wraps it."""
    return isinstance(exc, TimeoutError) or any(
        cls.__name__ in ("TimeoutException", "APITimeoutError") for cls in type(exc).__mro__
    )


def failure_kind(exc: BaseException, status: int | None, context_too_long: bool = False) -> ErrorKind:
    """Which failure an SDK exception is: from its HTTP ``status`` (the adapter reads it the SDK's way),
    ``context_too_long`` as the adapter recognized it, or a timeout anywhere in its chain."""
    if context_too_long:
        return ErrorKind.CONTEXT_TOO_LONG
    if status in (401, 403):
        return ErrorKind.PROVIDER_REJECTED_KEY
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status in (408, 504) or any(_is_timeout(cause) for cause in _chain(exc)):
        return ErrorKind.TIMED_OUT
    return ErrorKind.PROVIDER_FAILED


def _chain(exc: BaseException) -> list[BaseException]:
    causes: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in causes and len(causes) < 8:
        causes.append(current)
        current = current.__cause__ or current.__context__
    return causes


CUT_OFF_NOTE = "\n\n[The answer was cut off: the model reached its output length limit.]"
"""Appended to a partial answer the provider stopped for length (OpenAI ``length``, Gemini ``MAX_TOKENS``):
the text is worth showing, but never as if it were complete."""


def describe_failure(exc: BaseException) -> str:
    """A one-line description of ``exc`` and its causes, for the server log, without the configured secrets
    or key-shaped text (:mod:`agent_app.log_redaction` redacts the log record again in any case)."""
    parts: list[str] = []
    for current in _chain(exc)[:4]:
        status = getattr(current, "status_code", None) or getattr(current, "code", None)
        label = type(current).__name__ + (f"[{status}]" if isinstance(status, int) else "")
        code = getattr(current, "code", None)  # OpenAI's machine-readable cause, e.g. context_length_exceeded
        if isinstance(code, str) and code:
            label += f" (code {code})"
        message = " ".join(str(current).split())[:300]
        parts.append(f"{label}: {message}" if message else label)
    return log_redaction.redact(" <- ".join(parts))
