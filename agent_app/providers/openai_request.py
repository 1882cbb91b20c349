"""Our history and tool schemas as an OpenAI chat-completions request (``messages`` and ``tools``).

Why apart from the adapter (:mod:`agent_app.providers.openai_compatible`): building the request and reading
the answer are separate jobs that meet only in ``provider_metadata``, where the adapter keeps the arguments
a model wrote unreadably and this module replays them as written (so the model sees its own mistake next to
the error it caused). Ids that OpenAI would refuse are sent as stable aliases.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, assert_never

from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from pydantic_core import to_json

from agent_app.providers.base import ProviderError
from agent_app.types import ChatMessage, ToolResult, ToolSchema


def _to_json(value: object) -> str:
    """Compact JSON text (pydantic-core's encoder: ~10x the stdlib's on the small objects a history holds)."""
    return to_json(value, fallback=str).decode()


def tool_schema_to_openai(schema: ToolSchema) -> ChatCompletionFunctionToolParam:
    """Our internal schema as an OpenAI function tool whose ``parameters`` is a JSON Schema object."""
    properties: dict[str, Any] = {}
    for parameter in schema.parameters:
        prop: dict[str, Any] = {"type": parameter.type}
        if parameter.type == "array":  # OpenAI: 400 "array schema missing items"; strings, as for Gemini
            prop["items"] = {"type": "string"}
        if parameter.description:
            prop["description"] = parameter.description
        properties[parameter.key] = prop
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.key for p in schema.parameters if p.required]
    if required:
        parameters["required"] = required
    return {
        "type": "function",
        "function": {"name": schema.name, "description": schema.description, "parameters": parameters},
    }


def tool_result_text(result: ToolResult) -> str:
    """A tool result as the ``content`` string of a ``tool`` message: JSON the model can read."""
    payload: dict[str, Any] = {"error": result.error} if result.error is not None else {"result": result.result}
    return _to_json(payload)


METADATA_KEY = "openai-compatible"
"""``provider_metadata[METADATA_KEY] = {"rawArguments": {call id: the unreadable arguments string}}``: a
call whose arguments could not be parsed is replayed as the model wrote it, so the model sees its own
mistake next to the error it caused."""


def _raw_arguments(message: ChatMessage) -> dict[str, Any]:
    metadata = (message.provider_metadata or {}).get(METADATA_KEY)
    raw = metadata.get("rawArguments") if isinstance(metadata, dict) else None
    return raw if isinstance(raw, dict) else {}


_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def wire_call_id(call_id: str) -> str:
    """The id as sent in the history: unchanged when OpenAI accepts it (at most 40 characters; vLLM's are
    46, and another provider's or a client's may hold anything), else a stable ``call_`` + 32 hex alias, so
    a call and its result still carry the same id."""
    if _SAFE_ID.fullmatch(call_id):
        return call_id
    return f"call_{hashlib.sha256(call_id.encode()).hexdigest()[:32]}"


def _assistant_message(message: ChatMessage) -> ChatCompletionMessageParam:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    raw = _raw_arguments(message) if message.provider_metadata else {}
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": wire_call_id(call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": str(raw.get(call.id, "")) or _to_json(call.args)},
        }
        for call in message.tool_calls
    ]
    if message.content:
        return {"role": "assistant", "content": message.content, "tool_calls": calls}
    # No ``content`` key at all rather than null: the same to every server, and a smaller body.
    return {"role": "assistant", "tool_calls": calls}


def _tool_message(message: ChatMessage) -> ChatCompletionMessageParam:
    result = message.tool_result
    if result is None:
        raise ProviderError("a tool message without a tool result cannot be sent")
    return {"role": "tool", "tool_call_id": wire_call_id(result.tool_call_id), "content": tool_result_text(result)}


def _message_to_openai(message: ChatMessage) -> ChatCompletionMessageParam:
    """One message of our history as a chat message; every role is matched: a new one is a type error."""
    role = message.role
    if role == "system":
        return {"role": "system", "content": message.content}
    if role == "user":
        return {"role": "user", "content": message.content}
    if role == "assistant":
        return _assistant_message(message)
    if role == "tool":
        return _tool_message(message)
    assert_never(role)


def messages_to_openai(system_prompt: str, messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Our history as chat messages: the system prompt first, assistant turns with ``tool_calls``, tool
    results as ``tool`` messages carrying ``tool_call_id``."""
    wire: list[ChatCompletionMessageParam] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    wire.extend(map(_message_to_openai, messages))
    return wire
