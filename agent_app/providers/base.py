"""The provider adapter interface: one method, ``chat(params) -> response``, in our own types.

Why: the route must not know any provider's wire format, and every provider must look the same to it.
An adapter converts our history and internal tool schemas to its SDK's request, and the SDK's answer
back to :class:`ProviderChatResponse`; any failure becomes :class:`ProviderError`, whose message is
safe to log (secrets removed) and is never shown to the caller (the route answers a fixed text).
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from agent_app import log_redaction
from agent_app.types import ChatMessage, ChatResponse, ToolCall, ToolSchema

ProviderToolCall: TypeAlias = ToolCall
"""The spec's ``ProviderToolCall {id, name, args}`` is our :class:`~agent_app.types.ToolCall`."""


class ProviderChatParams(BaseModel):
    """What the route hands an adapter: the history, the system prompt and the internal tool schemas."""

    model_config = ConfigDict(frozen=True)

    messages: list[ChatMessage]
    system_prompt: str = ""
    tool_schemas: list[ToolSchema] = Field(default_factory=list)


class ProviderChatResponse(BaseModel):
    """An adapter's answer. ``tool_calls`` is ``None`` (not ``[]``) when the model asked for no tool.

    ``provider_metadata`` is what the adapter needs back on the next request (the route returns it in
    the response; the orchestrator stores it on the assistant message).
    """

    content: str = ""
    tool_calls: list[ToolCall] | None = None
    provider_metadata: dict[str, Any] | None = None

    def to_chat_response(self) -> ChatResponse:
        return ChatResponse(
            content=self.content,
            tool_calls=self.tool_calls or None,
            provider_metadata=self.provider_metadata,
        )


class ProviderError(Exception):
    """The provider could not give a usable answer (network, auth, rate limit, 5xx, timeout, unreadable
    or empty response). The message describes the cause for the server log, with secrets removed."""


class ProviderAdapter(ABC):
    """A provider behind our types. Instances are cached per configuration and shared between threads,
    so ``chat`` keeps no per-call state on ``self``."""

    name: str

    @abstractmethod
    def chat(self, params: ProviderChatParams) -> ProviderChatResponse:
        """One model request; raise :class:`ProviderError` on any failure."""


CUT_OFF_NOTE = "\n\n[The answer was cut off: the model reached its output length limit.]"
"""Appended to a partial answer the provider stopped for length (OpenAI ``length``, Gemini ``MAX_TOKENS``):
the text is worth showing, but never as if it were complete."""


def history_call_ids(messages: Iterable[ChatMessage]) -> set[str]:
    """Every tool-call id already in the conversation. A returned call must not reuse one: servers that
    number calls per response (``call_0`` every turn) would otherwise give two turns the same id, and the
    page matches results (cards, recovery of an interrupted run) to calls by id across the conversation."""
    return {call.id for message in messages for call in message.tool_calls or []}


def synthesize_call_id() -> str:
    """A unique tool-call id for providers that send none: ``call_`` + 32 hex (37 characters of
    ``[A-Za-z0-9_]``, within every provider's id rules)."""
    return f"call_{uuid.uuid4().hex}"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` without ``secrets``, the configured ones and anything shaped like a provider key: the same
    step every log record passes (:mod:`agent_app.log_redaction`), for text that goes elsewhere."""
    return log_redaction.redact(text, secrets)


def describe_failure(exc: BaseException, secrets: Iterable[str]) -> str:
    """A one-line, secret-free description of ``exc`` and its causes, for the server log."""
    keys = list(secrets)
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < 4:
        seen.add(id(current))
        status = getattr(current, "status_code", None) or getattr(current, "code", None)
        label = type(current).__name__ + (f"[{status}]" if isinstance(status, int) else "")
        code = getattr(current, "code", None)  # OpenAI's machine-readable cause, e.g. context_length_exceeded
        if isinstance(code, str) and code:
            label += f" (code {code})"
        message = " ".join(str(current).split())[:300]
        parts.append(f"{label}: {message}" if message else label)
        current = current.__cause__ or current.__context__
    return redact(" <- ".join(parts), keys)
