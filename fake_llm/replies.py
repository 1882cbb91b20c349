"""What the fake server answers: :class:`Reply` and the builders of each provider's real answers and errors.

Why builders: a test states what the provider says (``openai_tool_calls(tool_call("t", {...}))``) and the
wire bytes, whole or streamed (:mod:`fake_llm.streams`), come out as the real APIs send them.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from fake_llm.recorded import RecordedRequest
from fake_llm.streams import (
    DEFAULT_STREAM,
    StreamScript,
)

CANARY_API_KEY = "canary-KEY-4f1d9a7e2b6c0d3e"
"""An API key for tests to configure and then look for: it must never show up in a response, an
error or a log line (deliberately not shaped like a real key, so only exact redaction hides it)."""


@dataclass(frozen=True)
class Reply:
    """What the server answers: status, headers and body, optionally after a delay.

    ``delay_seconds`` waits before answering (cut short when the server stops, or when ``release`` is set: a
    test holds a reply until it has seen what it waits for, see :func:`held`); ``render`` when set
    replaces ``body`` with a body computed from the request (used by transcription formats). ``stream``
    says how the body is streamed when the request asks for a stream (``None``: sent whole regardless, as
    a server that cannot stream does); the builders of whole answers set the default script.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_seconds: float = 0.0
    release: threading.Event | None = None
    render: Callable[[RecordedRequest], tuple[bytes, str]] | None = None
    stream: StreamScript | None = None


ReplySource: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


def json_payload_reply(
    payload: Any, status: int = 200, headers: tuple[tuple[str, str], ...] = (), stream: StreamScript | None = None
) -> Reply:
    return Reply(status=status, body=json.dumps(payload).encode(), headers=headers, stream=stream)


# --- OpenAI chat completions ------------------------------------------------------------------


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> dict[str, Any]:
    """One OpenAI ``tool_calls`` entry. ``arguments`` as a dict is JSON-encoded; a string is sent verbatim
    (malformed JSON on purpose); ``id`` defaults to a fresh ``call_...`` (pass ``""`` to send an empty id)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}" if id is None else id,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def openai_completion(message: dict[str, Any], finish_reason: str | None = "stop", model: str = "fake-model") -> Reply:
    """A whole chat completion around one assistant ``message`` (as the wire carries it)."""
    return json_payload_reply(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        stream=DEFAULT_STREAM,
    )


def openai_text(content: str | None, finish_reason: str | None = "stop", model: str = "fake-model") -> Reply:
    """An assistant text answer."""
    return openai_completion({"role": "assistant", "content": content}, finish_reason, model)


def openai_tool_calls(
    *calls: dict[str, Any], content: str | None = None, finish_reason: str | None = "tool_calls"
) -> Reply:
    """An assistant turn asking for tools (build entries with :func:`tool_call`). ``finish_reason`` is
    configurable because local servers disagree about it (some say ``stop``)."""
    return openai_completion({"role": "assistant", "content": content, "tool_calls": list(calls)}, finish_reason)


# --- Gemini generateContent -------------------------------------------------------------------


def gemini_call(
    name: str,
    args: dict[str, Any] | None = None,
    id: str | None = None,
    thought_signature: bytes | None = None,
) -> dict[str, Any]:
    """One Gemini ``functionCall`` part; ``id`` is left out when ``None``; the signature is base64-encoded
    as the API sends it."""
    call: dict[str, Any] = {"name": name, "args": args or {}}
    if id is not None:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if thought_signature is not None:
        part["thoughtSignature"] = base64.b64encode(thought_signature).decode()
    return part


def gemini_response(
    parts: Sequence[dict[str, Any]] | None,
    finish_reason: str = "STOP",
    candidates: list[dict[str, Any]] | None = None,
    model: str = "fake-gemini",
) -> Reply:
    """A ``GenerateContentResponse``. ``parts=None`` with ``candidates=[]`` sends no candidates at all;
    ``candidates`` overrides everything else."""
    if candidates is None:
        candidate: dict[str, Any] = {"finishReason": finish_reason, "index": 0}
        if parts is not None:
            candidate["content"] = {"role": "model", "parts": list(parts)}
        candidates = [candidate]
    return json_payload_reply(
        {
            "candidates": candidates,
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:16],
        },
        stream=DEFAULT_STREAM,
    )


def gemini_text(text: str, thought_signature: bytes | None = None) -> Reply:
    """A model text answer (optionally carrying a thought signature on its part)."""
    part: dict[str, Any] = {"text": text}
    if thought_signature is not None:
        part["thoughtSignature"] = base64.b64encode(thought_signature).decode()
    return gemini_response([part])


def gemini_function_calls(*parts: dict[str, Any], text: str | None = None) -> Reply:
    """A model turn of function calls (build parts with :func:`gemini_call`), optionally after text."""
    all_parts: list[dict[str, Any]] = ([{"text": text}] if text is not None else []) + list(parts)
    return gemini_response(all_parts)


# --- OpenAI transcriptions --------------------------------------------------------------------


def _timestamp(seconds: float, separator: str) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def transcription_reply(
    text: str,
    segments: Sequence[tuple[float, float, str]] | None = None,
    language: str = "english",
    duration: float | None = None,
) -> Reply:
    """A transcription answered in the format the request's ``response_format`` asks for.

    ``segments`` are ``(start_s, end_s, text)``; by default one segment spanning the whole ``duration``.
    """
    total = duration if duration is not None else (segments[-1][1] if segments else 1.0)
    segs = list(segments) if segments is not None else [(0.0, total, text)]

    def render(request: RecordedRequest) -> tuple[bytes, str]:
        fmt = request.form.get("response_format", "json")
        if fmt == "text":
            return text.encode(), "text/plain; charset=utf-8"
        if fmt == "verbose_json":
            payload = {
                "task": "transcribe",
                "language": language,
                "duration": total,
                "text": text,
                "segments": [
                    {
                        "id": i,
                        "seek": 0,
                        "start": start,
                        "end": end,
                        "text": seg_text,
                        "tokens": [],
                        "temperature": 0.0,
                        "avg_logprob": -0.2,
                        "compression_ratio": 1.0,
                        "no_speech_prob": 0.01,
                    }
                    for i, (start, end, seg_text) in enumerate(segs)
                ],
            }
            return json.dumps(payload).encode(), "application/json"
        if fmt in ("srt", "vtt"):
            sep = "," if fmt == "srt" else "."
            cues = [
                (f"{i + 1}\n" if fmt == "srt" else "")
                + f"{_timestamp(start, sep)} --> {_timestamp(end, sep)}\n{seg_text.strip()}\n"
                for i, (start, end, seg_text) in enumerate(segs)
            ]
            head = "WEBVTT\n\n" if fmt == "vtt" else ""
            return (head + "\n".join(cues)).encode(), "text/plain; charset=utf-8"
        return json.dumps({"text": text}).encode(), "application/json"

    return Reply(render=render)


# --- Faults -----------------------------------------------------------------------------------


_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def error_reply(status: int, message: str = "fake provider error", retry_after_ms: int | None = None) -> Reply:
    """An API error body both SDKs understand (OpenAI's ``error.message/type`` and Google's
    ``error.code/message/status``). ``retry_after_ms`` adds OpenAI's ``retry-after-ms`` header so retry
    tests need not wait the SDK's default backoff."""
    headers = (("retry-after-ms", str(retry_after_ms)),) if retry_after_ms is not None else ()
    return json_payload_reply(
        {
            "error": {
                "code": status,
                "message": message,
                "status": _STATUS_NAMES.get(status, "UNKNOWN"),
                "type": "fake_error",
            }
        },
        status=status,
        headers=headers,
    )


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """``payload`` exactly as given (a whole provider response or error body), with extra headers."""
    return json_payload_reply(payload, status, tuple((headers or {}).items()))


def raw_reply(body: bytes, status: int = 200, content_type: str = "application/json") -> Reply:
    """Exactly these bytes (e.g. an unreadable body)."""
    return Reply(status=status, body=body, content_type=content_type)


def hang(seconds: float = 30.0) -> Reply:
    """No answer for ``seconds`` (then an empty 504), for timeout tests. Released when the server stops."""
    return Reply(status=504, body=b"{}", delay_seconds=seconds)


def delayed(reply: Reply, seconds: float) -> Reply:
    """``reply``, sent after ``seconds`` (a stream's first byte comes that late)."""
    return dataclasses.replace(reply, delay_seconds=seconds)


def held(reply: Reply, release: threading.Event, at_most: float = 60.0) -> Reply:
    """``reply``, sent once the test sets ``release`` (or after ``at_most`` seconds): a model that is still
    working for exactly as long as the test needs, instead of a fixed delay long enough for a slow machine."""
    return dataclasses.replace(reply, delay_seconds=at_most, release=release)


def streamed(reply: Reply, script: StreamScript = DEFAULT_STREAM) -> Reply:
    """``reply`` (an :func:`openai_completion` or :func:`gemini_response`), streamed as ``script`` says when
    the request asks for a stream."""
    return dataclasses.replace(reply, stream=script)


def not_streamed(reply: Reply) -> Reply:
    """``reply`` sent whole even to a request asking for a stream (a server that cannot stream)."""
    return dataclasses.replace(reply, stream=None)


def openai_faults() -> dict[str, Reply]:
    """The fault matrix of the chat endpoint, by name: what every layer above must turn into a provider
    error (the ``401`` echoes :data:`CANARY_API_KEY`, as real providers echo part of a bad key)."""
    return {
        "500": error_reply(500),
        "429": error_reply(429, retry_after_ms=1),
        "401": error_reply(401, f"Incorrect API key provided: {CANARY_API_KEY}"),
        "hang": hang(10),
        "unreadable-body": raw_reply(b"<html>502 Bad Gateway</html>"),
        "empty-response": openai_text(""),
    }
