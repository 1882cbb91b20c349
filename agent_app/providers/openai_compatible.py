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

import json
from collections.abc import AsyncIterable, Sequence
from types import SimpleNamespace
from typing import Any

import openai
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
)

from agent_app.providers.base import CUT_OFF_NOTE, ProviderError, describe_failure
from agent_app.providers.openai_request import METADATA_KEY, messages_to_openai, tool_schema_to_openai
from agent_app.providers.openai_stream import AssembledMessage, CompletionAssembler, text_of, token_usage
from agent_app.providers.provider_loop import PacedTextSink
from agent_app.providers.provider_text import valid_data, valid_text
from agent_app.providers.sdk_adapter import SDKAdapter
from agent_app.types import (
    ChatMessage,
    ChatResponse,
    ToolCall,
    ToolSchema,
    history_call_ids,
    synthesize_call_id,
)
from agent_app.validation import MAX_JSON_DEPTH, json_depth_exceeds


class _UnreadableArgumentsError(ValueError):
    """The arguments are not a JSON object; the text says why, for the model to act on."""


_TOO_DEEP = f"The arguments nest more than {MAX_JSON_DEPTH} levels deep; send a flatter object"


def parse_arguments(raw: object) -> tuple[dict[str, Any], str | None]:
    """``(args, None)`` for a JSON object (or nothing), ``({}, why)`` for anything else."""
    try:
        return _arguments_object(raw), None
    except _UnreadableArgumentsError as exc:
        return {}, str(exc)


def _arguments_object(raw: object) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    parsed = _decoded(raw) if isinstance(raw, str | bytes) else raw  # some servers send an object, not a string
    if not isinstance(parsed, dict):
        raise _UnreadableArgumentsError(f"The arguments must be a JSON object, got {type(parsed).__name__}")
    if json_depth_exceeds(parsed):
        raise _UnreadableArgumentsError(_TOO_DEEP)
    return parsed


def _null(constant: str) -> None:
    """``NaN`` and ``Infinity`` (Python's reader takes them; they are not JSON) read as ``null``, as stored."""


def _decoded(raw: str | bytes) -> object:
    try:
        return json.loads(raw, parse_constant=_null)
    except json.JSONDecodeError as exc:
        why = f"The arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
        raise _UnreadableArgumentsError(why) from None
    except ValueError as exc:
        raise _UnreadableArgumentsError(f"The arguments are not valid JSON ({exc}); send a JSON object") from None
    except RecursionError:
        raise _UnreadableArgumentsError(_TOO_DEEP) from None


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
        calls.append(ToolCall(id=call_id, name=valid_text(function.name), args=valid_data(args), arguments_error=error))
        if error is not None:
            unreadable[call_id] = valid_text(str(function.arguments))
    content = valid_text(text_of(message.content) or text_of(getattr(message, "refusal", None)))  # a refusal too
    if not calls and not content.strip():
        raise ProviderError(f"the response is empty (finish_reason={finish_reason})")
    if finish_reason == "length" and content.strip():
        content += CUT_OFF_NOTE
    metadata = {METADATA_KEY: {"rawArguments": unreadable}} if unreadable else None
    return ChatResponse(content=content, tool_calls=calls or None, provider_metadata=metadata, usage=token_usage(usage))


class OpenAICompatibleAdapter(SDKAdapter[openai.AsyncOpenAI]):
    """An ``openai.AsyncOpenAI`` client per configuration and event loop; the SDK does the retries (429, 5xx,
    timeouts, before the stream starts) with ``LLM_MAX_RETRIES`` and honours ``Retry-After``."""

    name = "openai-compatible"

    def new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self.config.api_key,
            base_url=self.config.base_url,
            timeout=self.config.timeout_seconds,
            max_retries=self.config.max_retries,
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        system_prompt: str,
        tool_schemas: Sequence[ToolSchema],
        on_text: PacedTextSink,
    ) -> ChatResponse:
        wire_messages = messages_to_openai(system_prompt, messages)
        tools = [tool_schema_to_openai(schema) for schema in tool_schemas]
        assembler = CompletionAssembler()
        await self.relay(lambda client: self._open(client, wire_messages, tools, assembler), assembler, on_text)
        taken = history_call_ids(messages)
        if assembler.whole is not None:
            return completion_to_response(assembler.whole, taken)
        if not assembler.seen_choice:
            raise ProviderError("the stream has no choices")
        return message_to_response(assembler.message(), assembler.finish_reason, assembler.usage, taken)

    async def _open(
        self,
        client: openai.AsyncOpenAI,
        messages: list[ChatCompletionMessageParam],
        tools: list[ChatCompletionFunctionToolParam],
        assembler: CompletionAssembler,
    ) -> AsyncIterable[ChatCompletionChunk]:
        """The streamed request; a server that answers it whole (not an event stream) leaves its completion on
        ``assembler`` and no chunks."""
        stream = await client.chat.completions.create(
            model=self.config.model,
            messages=messages,
            tools=tools or openai.omit,
            stream=True,
            stream_options={"include_usage": True},
        )
        if stream.response.headers.get("content-type", "").startswith("text/event-stream"):
            return stream
        assembler.whole = whole_completion(await stream.response.aread())
        return _NO_CHUNKS

    def status_of(self, exc: Exception) -> int | None:
        return exc.status_code if isinstance(exc, openai.APIStatusError) else None

    def context_too_long(self, exc: Exception, status: int | None) -> bool:
        return getattr(exc, "code", None) == "context_length_exceeded"

    def describe(self, exc: Exception) -> str:
        cause = describe_failure(exc)
        if isinstance(exc, openai.NotFoundError):  # the usual local-server mistake, worth a hint in the log
            cause += " (check LLM_BASE_URL, which usually ends in /v1, and LLM_MODEL)"
        return cause


class _NoChunks:
    """The chunks of an answer that came whole."""

    def __aiter__(self) -> _NoChunks:
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        raise StopAsyncIteration


_NO_CHUNKS = _NoChunks()


def whole_completion(body: bytes) -> object:
    """The body of a server that answered a stream request whole, built as the SDK builds a completion
    (leniently); anything but a JSON object is returned as it is, for :func:`completion_to_response` to
    refuse."""
    data = json.loads(body)
    return ChatCompletion.construct(**data) if isinstance(data, dict) else data
