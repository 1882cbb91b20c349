"""The streamed forms of the fake LLM server's answers: OpenAI chat-completion chunks and Gemini
``streamGenerateContent?alt=sse`` events, built from the same whole answer a non-streamed request gets.

Why a second form of every answer: the adapters always stream, and a test scripts an answer once
(``openai_text("Hi")``); the server sends it whole or streamed depending on what the request asked for,
exactly as a real provider does. What is sent follows what the installed SDKs parse:

* OpenAI (``openai/_streaming.py``): ``data: <ChatCompletionChunk JSON>`` events; the first delta carries
  the role, text (and a refusal) arrives as ``delta.content`` (``delta.refusal``) pieces, each tool call as a
  first delta with ``index``, ``id``, ``type`` and ``function.name`` followed by ``function.arguments``
  fragments of the same ``index``; the last choice chunk carries ``finish_reason``; with
  ``stream_options.include_usage`` every chunk has ``usage: null`` and a final chunk with ``choices: []``
  carries the usage; then ``data: [DONE]``. An event whose JSON has an ``error`` key is the SDK's
  ``APIError``.
* Gemini (``google/genai/_api_client.py``): ``data: <GenerateContentResponse JSON>`` events separated by a
  blank line; text parts arrive in pieces, each function call whole in its own event, a thought signature on
  the last piece of its part (or, as Gemini also does, on an empty text part of its own); every event has
  ``usageMetadata`` and the last one the ``finishReason`` and the output token count. An event
  ``{"error": {...}}`` is the SDK's ``APIError``.

:class:`StreamScript` says how a reply streams (pieces, pauses, where it breaks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

UsageMode: TypeAlias = Literal["separate", "with-finish", "none"]
SignaturePlacement: TypeAlias = Literal["on-text", "empty-part"]
Fault: TypeAlias = Literal["cut", "malformed", "error"]


@dataclass(frozen=True)
class StreamScript:
    """How one reply is streamed.

    ``pieces``: text (and tool-call arguments) split into at most this many deltas. ``delay_seconds``: pause
    before every event after the first. ``fault_after`` events are sent, then ``fault``: ``"cut"`` drops the
    connection mid-body (no final chunk of the chunked encoding), ``"malformed"`` sends an event that is not
    JSON, ``"error"`` sends a provider error event (``error_message``). ``usage``: ``"separate"`` honours
    OpenAI's ``stream_options.include_usage`` with a final chunk of its own, ``"with-finish"`` puts usage on
    the finish chunk (some local servers), ``"none"`` sends none (a server ignoring ``stream_options``; for
    Gemini, no ``usageMetadata``). ``signature``: where Gemini's thought signature of a text part goes.
    """

    pieces: int = 3
    delay_seconds: float = 0.0
    fault: Fault | None = None
    fault_after: int = 0
    error_message: str = "fake stream error"
    usage: UsageMode = "separate"
    signature: SignaturePlacement = "on-text"


DEFAULT_STREAM = StreamScript()

DONE = b"data: [DONE]\n\n"
MALFORMED = b'data: {"choices": [{"delta": {"content": "unfinished\n\n'


def event(payload: Any) -> bytes:
    """One SSE event carrying ``payload`` as JSON."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def split_text(text: str, pieces: int) -> list[str]:
    """``text`` in at most ``pieces`` consecutive non-empty parts (one empty part for empty text)."""
    if not text:
        return [""]
    count = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), count)
    parts, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        parts.append(text[start:end])
        start = end
    return parts


# --- OpenAI -----------------------------------------------------------------------------------


def openai_stream_events(completion: dict[str, Any], script: StreamScript, include_usage: bool) -> list[bytes]:
    """The chunks of a whole ``chat.completion`` body, ending with ``[DONE]``."""
    with_usage_chunk = include_usage and script.usage == "separate"
    base: dict[str, Any] = {
        "id": completion.get("id", "chatcmpl-fake"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", "fake-model"),
        "system_fingerprint": None,
    }
    choice = completion["choices"][0]
    message = choice.get("message") or {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        payload = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if with_usage_chunk:
            payload["usage"] = None
        return payload

    chunks = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content")
    if isinstance(content, str) and content:
        chunks.extend(chunk({"content": piece}) for piece in split_text(content, script.pieces))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        chunks.extend(chunk({"refusal": piece}) for piece in split_text(refusal, script.pieces))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        first = {"index": index, "id": call.get("id"), "type": "function"}
        first["function"] = {"name": function.get("name"), "arguments": ""}
        chunks.append(chunk({"tool_calls": [first]}))
        arguments = function.get("arguments")
        for piece in split_text(arguments if isinstance(arguments, str) else json.dumps(arguments), script.pieces):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    final = chunk({}, choice.get("finish_reason"))
    if script.usage == "with-finish":
        final["usage"] = completion.get("usage")
    chunks.append(final)
    if with_usage_chunk:
        chunks.append({**base, "choices": [], "usage": completion.get("usage")})
    return [event(payload) for payload in chunks] + [DONE]


def openai_error_event(message: str) -> bytes:
    """The error event OpenAI sends mid-stream (the SDK raises ``APIError`` with its message)."""
    return event({"error": {"message": message, "type": "server_error", "param": None, "code": None}})


# --- Gemini -----------------------------------------------------------------------------------


def _gemini_parts(parts: list[dict[str, Any]], script: StreamScript) -> Iterator[dict[str, Any]]:
    """Each part as Gemini streams it: text in pieces, anything else whole."""
    for part in parts:
        text = part.get("text")
        if not isinstance(text, str):
            yield part
            continue
        extras = {key: value for key, value in part.items() if key not in ("text", "thoughtSignature")}
        signature = part.get("thoughtSignature")
        pieces = split_text(text, script.pieces)
        for index, piece in enumerate(pieces):
            streamed = {"text": piece, **extras}
            if signature is not None and index == len(pieces) - 1 and script.signature == "on-text":
                streamed["thoughtSignature"] = signature
            yield streamed
        if signature is not None and script.signature == "empty-part":
            yield {"text": "", "thoughtSignature": signature}


def gemini_stream_events(response: dict[str, Any], script: StreamScript) -> list[bytes]:
    """The events of a whole ``GenerateContentResponse``. A response that is not one candidate with parts
    (no candidates, a blocked prompt) is sent as its single event, as Gemini does."""
    candidates = response.get("candidates")
    content = candidates[0].get("content") if isinstance(candidates, list) and len(candidates) == 1 else None
    parts = content.get("parts") if isinstance(content, dict) else None
    usage = response.get("usageMetadata") or {}
    if not parts:
        return [event(response if script.usage != "none" else _without_usage(response))]
    candidate = candidates[0]  # type: ignore[index]
    streamed = list(_gemini_parts(parts, script))
    base = {key: value for key, value in response.items() if key not in ("candidates", "usageMetadata")}
    events = []
    for index, part in enumerate(streamed):
        last = index == len(streamed) - 1
        streamed_candidate: dict[str, Any] = {"content": {"role": content.get("role", "model"), "parts": [part]}}  # type: ignore[union-attr]
        streamed_candidate["index"] = 0
        if last:
            streamed_candidate.update({k: v for k, v in candidate.items() if k not in ("content", "index")})
        payload: dict[str, Any] = {"candidates": [streamed_candidate], **base}
        if script.usage != "none":
            payload["usageMetadata"] = usage if last else _prompt_only(usage)
        events.append(event(payload))
    return events


def _prompt_only(usage: dict[str, Any]) -> dict[str, Any]:
    prompt = usage.get("promptTokenCount")
    return {"promptTokenCount": prompt, "totalTokenCount": prompt} if prompt is not None else {}


def _without_usage(response: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in response.items() if key != "usageMetadata"}


def gemini_error_event(message: str, code: int = 500) -> bytes:
    """An error event in Google's error shape (the SDK raises ``APIError`` for it)."""
    return event({"error": {"code": code, "message": message, "status": "INTERNAL"}})
