"""The ``openai-compatible`` adapter: OpenAI and every server speaking its chat-completions API (Ollama,
vLLM, llama.cpp, LM Studio...), through the official ``openai`` SDK with ``base_url`` from ``LLM_BASE_URL``.

Local servers differ from OpenAI in small ways this adapter absorbs rather than passes on:

* ``finish_reason`` is unreliable (some say ``stop`` next to tool calls), so tool calls are read from the
  presence of ``tool_calls`` only.
* Call ids may be empty (``""``) or repeated, within a response or across turns (``call_0`` every time);
  those are replaced by synthesized unique ids.
* Arguments are a JSON *string* the model wrote; when it is not a JSON object the call is returned with
  ``arguments_error`` set, so the orchestrator answers it with an error the model can act on instead of
  the whole request failing.
* A server still speaking the deprecated ``functions`` protocol answers with ``function_call``: it becomes a
  tool call with a synthesized id (and is replayed as one, which every such server also accepts).
* Vendor extras (``reasoning_content``, ``x_groq``, ``provider``...) are ignored: reasoning is not the answer.
* Text stopped by ``finish_reason: "length"`` is returned with :data:`CUT_OFF_NOTE`; a 200 whose body is an
  ``{"error": ...}`` (OpenRouter does this) is a :class:`ProviderError` carrying that error's message.
* Every request streams (``stream_options.include_usage`` asks for the token counts); the chunks are put
  back together (:mod:`agent_app.providers.openai_stream`) and read like a whole completion. A server that
  answers a stream request with a whole JSON completion is read as such; one that ignores
  ``stream_options`` just leaves ``usage`` unset. A stream that breaks (connection cut, unreadable chunk,
  error event) is a :class:`ProviderError` carrying the text that had arrived.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, assert_never

import openai
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from pydantic_core import to_json

from agent_app.errors import ErrorKind
from agent_app.llm_config import LLMConfig
from agent_app.providers.base import CUT_OFF_NOTE, ProviderAdapter, ProviderError, describe_failure, failure_kind
from agent_app.providers.openai_stream import AssembledMessage, CompletionAssembler, text_of, token_usage
from agent_app.providers.provider_loop import TextSink
from agent_app.types import (
    ChatMessage,
    ChatResponse,
    ToolCall,
    ToolResult,
    ToolSchema,
    history_call_ids,
    synthesize_call_id,
)
from agent_app.validation import MAX_JSON_DEPTH, json_depth_exceeds


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
    # No ``content`` key at all rather than null: the same to every server, and the SDK's per-key
    # request transform is its most expensive step.
    return {"role": "assistant", "tool_calls": calls}


def _tool_message(message: ChatMessage) -> ChatCompletionMessageParam:
    result = message.tool_result
    if result is None:
        raise ProviderError("a tool message without a tool result cannot be sent")
    return {"role": "tool", "tool_call_id": wire_call_id(result.tool_call_id), "content": tool_result_text(result)}


def messages_to_openai(system_prompt: str, messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Our history as chat messages: the system prompt first, assistant turns with ``tool_calls``, tool
    results as ``tool`` messages carrying ``tool_call_id``. Every role is matched: a new one is a type error."""
    wire: list[ChatCompletionMessageParam] = []
    if system_prompt:
        wire.append({"role": "system", "content": system_prompt})
    for message in messages:
        role = message.role
        if role == "system":
            wire.append({"role": "system", "content": message.content})
        elif role == "user":
            wire.append({"role": "user", "content": message.content})
        elif role == "assistant":
            wire.append(_assistant_message(message))
        elif role == "tool":
            wire.append(_tool_message(message))
        else:
            assert_never(role)
    return wire


def parse_arguments(raw: object) -> tuple[dict[str, Any], str | None]:
    """``(args, None)`` for a JSON object (or nothing), ``({}, why)`` for anything else."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict) and not json_depth_exceeds(raw):  # some servers send an object, not a string
        return raw, None
    try:
        parsed = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except json.JSONDecodeError as exc:
        return {}, f"The arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    except ValueError as exc:
        return {}, f"The arguments are not valid JSON ({exc}); send a JSON object"
    except RecursionError:
        return {}, f"The arguments nest more than {MAX_JSON_DEPTH} levels deep; send a flatter object"
    if not isinstance(parsed, dict):
        return {}, f"The arguments must be a JSON object, got {type(parsed).__name__}"
    if json_depth_exceeds(parsed):
        return {}, f"The arguments nest more than {MAX_JSON_DEPTH} levels deep; send a flatter object"
    return parsed, None


def _no_choices(completion: object) -> ProviderError:
    """The error for a body without choices, quoting the ``error`` some servers put in a 200 body."""
    if not isinstance(completion, ChatCompletion):
        kind = type(completion).__name__
        return ProviderError(f"the response is not a chat completion ({kind}: {completion!r:.200})")
    error = (completion.model_extra or {}).get("error")
    if isinstance(error, dict):
        error = error.get("message") or error
    return ProviderError(f"the response has no choices: {error}" if error else "the response has no choices")


def completion_to_response(completion: object, taken: set[str] | None = None) -> ChatResponse:
    """The SDK's completion as our response; an answer with nothing in it is a :class:`ProviderError`.
    A call id that is empty, repeated, or in ``taken`` (the history's ids) is replaced by a fresh one."""
    if not isinstance(completion, ChatCompletion) or not completion.choices:
        raise _no_choices(completion)
    choice = completion.choices[0]
    if choice.message is None:
        raise ProviderError("the response's first choice has no message")
    return message_to_response(choice.message, choice.finish_reason, completion.usage, taken)


def message_to_response(
    message: ChatCompletionMessage | AssembledMessage,
    finish_reason: str | None,
    usage: CompletionUsage | None,
    taken: set[str] | None = None,
) -> ChatResponse:
    """The answer's message (whole or assembled from a stream) as our response; see
    :func:`completion_to_response`."""
    calls: list[ToolCall] = []
    unreadable: dict[str, str] = {}
    seen: set[str] = set(taken or ())
    wire_calls: list[Any] = list(message.tool_calls or [])
    if not wire_calls and getattr(message, "function_call", None) is not None:
        wire_calls = [SimpleNamespace(id=None, function=message.function_call)]  # the legacy protocol
    for wire_call in wire_calls:
        function = getattr(wire_call, "function", None)
        if function is None or not getattr(function, "name", None):
            continue
        call_id = wire_call.id if wire_call.id and wire_call.id not in seen else synthesize_call_id()
        seen.add(call_id)
        args, error = parse_arguments(function.arguments)
        calls.append(ToolCall(id=call_id, name=function.name, args=args, arguments_error=error))
        if error is not None:
            unreadable[call_id] = str(function.arguments)
    content = text_of(message.content) or text_of(getattr(message, "refusal", None))  # a refusal is an answer
    if not calls and not content.strip():
        raise ProviderError(f"the response is empty (finish_reason={finish_reason})")
    if finish_reason == "length" and content.strip():
        content += CUT_OFF_NOTE
    metadata = {METADATA_KEY: {"rawArguments": unreadable}} if unreadable else None
    return ChatResponse(content=content, tool_calls=calls or None, provider_metadata=metadata, usage=token_usage(usage))


class OpenAICompatibleAdapter(ProviderAdapter):
    """One ``openai.AsyncOpenAI`` client per configuration and event loop (its connection pool is reused
    across requests); the SDK does the retries (429, 5xx, timeouts, before the stream starts) with
    ``LLM_MAX_RETRIES`` and honours ``Retry-After``."""

    name = "openai-compatible"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The client of the running event loop (its connections cannot serve another loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            with self._lock:
                client = self._clients.get(loop)
                if client is None:
                    client = openai.AsyncOpenAI(
                        api_key=self.config.api_key,
                        base_url=self.config.base_url,
                        timeout=self.config.timeout_seconds,
                        max_retries=self.config.max_retries,
                    )
                    self._clients[loop] = client
        return client

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        system_prompt: str,
        tool_schemas: Sequence[ToolSchema],
        on_text: TextSink,
    ) -> ChatResponse:
        wire_messages = messages_to_openai(system_prompt, messages)
        tools = [tool_schema_to_openai(schema) for schema in tool_schemas]
        assembler = CompletionAssembler()
        try:
            stream = await self.client.chat.completions.create(
                model=self.config.model,
                messages=wire_messages,
                tools=tools if tools else openai.omit,
                stream=True,
                stream_options={"include_usage": True},
            )
            async with stream:  # closes the response however the reading ends (a cancel included)
                whole = None
                if not stream.response.headers.get("content-type", "").startswith("text/event-stream"):
                    whole = whole_completion(await stream.response.aread())
                else:
                    async for chunk in stream:
                        text = assembler.add(chunk)
                        if text:
                            on_text(text)
        except Exception as exc:  # every SDK, transport and parse failure is a provider error
            raise ProviderError(self._cause(exc), _kind(exc), partial_text=assembler.text) from exc
        taken = history_call_ids(messages)
        if whole is not None:
            return completion_to_response(whole, taken)
        if not assembler.seen_choice:
            raise ProviderError("the stream has no choices")
        return message_to_response(assembler.message(), assembler.finish_reason, assembler.usage, taken)

    def _cause(self, exc: Exception) -> str:
        cause = describe_failure(exc)
        if isinstance(exc, openai.NotFoundError):  # the usual local-server mistake, worth a hint in the log
            cause += " (check LLM_BASE_URL, which usually ends in /v1, and LLM_MODEL)"
        return cause


def whole_completion(body: bytes) -> object:
    """The body of a server that answered a stream request whole, built as the SDK builds a completion
    (leniently); anything but a JSON object is returned as it is, for :func:`completion_to_response` to
    refuse."""
    data = json.loads(body)
    return ChatCompletion.construct(**data) if isinstance(data, dict) else data


def _kind(exc: Exception) -> ErrorKind:
    status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
    return failure_kind(exc, status, context_too_long=getattr(exc, "code", None) == "context_length_exceeded")
