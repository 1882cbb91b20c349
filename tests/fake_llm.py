"""A fake LLM server for tests: a real HTTP server on 127.0.0.1 speaking the providers' wire formats.

Why: the adapters and the transcription backends must be tested with the *real* SDKs (``openai``,
``google-genai``) doing real HTTP, so that what we assert is what actually goes over the wire. Nothing
of our own code is mocked; only the network peer is ours.

Endpoints (any path prefix is accepted, so ``/v1/...`` and ``/anything/v1/...`` both work):

* ``POST .../chat/completions`` — OpenAI chat completions, whole or streamed (``stream: true``). Script:
  ``server.chat``.
* ``POST .../audio/transcriptions`` — OpenAI transcriptions, multipart form with a ``file``; answers in
  the ``response_format`` the request asked for (``json`` default, ``verbose_json``, ``text``, ``srt``,
  ``vtt``). Script: ``server.transcription``.
* ``POST /{version}/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse`` — Gemini, whole
  or streamed. Script: ``server.gemini``.

Anything else answers 404 and is still recorded.

Base URLs to configure clients with:

* ``server.openai_base_url`` — ``http://127.0.0.1:<port>/v1`` (``openai.OpenAI(base_url=...)``, or the app's
  ``LLM_BASE_URL`` with ``LLM_PROVIDER=openai-compatible``).
* ``server.gemini_base_url`` — ``http://127.0.0.1:<port>/`` (``genai.Client(http_options=HttpOptions(
  base_url=...))`` or env ``GOOGLE_GEMINI_BASE_URL``; the SDK appends ``/{api_version}/models/...``).

Scripting — each endpoint (``server.chat``, ``server.gemini``, ``server.transcription``) is an
:class:`EndpointScript` with a FIFO queue of replies and a ``default`` used when the queue is empty::

    fake_llm.chat.push(openai_text("Hello"))                       # one canned reply
    fake_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {"assetId": "a1"})))
    fake_llm.chat.push(error_reply(500), error_reply(429, retry_after_ms=1), openai_text("ok"))
    fake_llm.chat.push(hang(5.0))                                 # answer nothing for 5 s (timeouts)
    fake_llm.chat.push(delayed(openai_text("late"), 0.2))         # answer after 0.2 s
    fake_llm.chat.push(raw_reply(b"not json", status=200))        # unreadable body
    fake_llm.chat.push(lambda req: openai_text(req.json["model"]))  # computed from the request
    fake_llm.chat.default = openai_text("always this")             # when the queue is empty
    fake_llm.gemini.push(gemini_text("Hi"), gemini_function_calls(
        gemini_call("transcribe_video", {"assetId": "a1"}, id="", thought_signature=b"sig")))
    fake_llm.transcription.push(transcription_reply("hello world", segments=[(0.0, 1.2, "hello world")]))

Streaming: a whole answer built by :func:`openai_completion` / :func:`gemini_response` (and the builders on
top of them) is streamed when the request asks for a stream, in the providers' real wire formats
(``tests/fake_llm_streams.py``): text in three pieces by default, tool-call arguments in fragments, usage
at the end. :func:`streamed` scripts it (pieces, pauses, a cut connection, a malformed event, an error
event, usage ignored); :func:`not_streamed` or ``server.streaming = False`` answer whole, as a server that
cannot stream does. Verbatim bodies (:func:`json_reply`, :func:`raw_reply`, errors) always go out whole::

    fake_llm.chat.push(streamed(openai_text("Hello world"), StreamScript(pieces=5, delay_seconds=0.05)))
    fake_llm.chat.push(streamed(openai_text("Hello world"), StreamScript(fault="cut", fault_after=2)))
    fake_llm.gemini.push(streamed(gemini_text("Hi", thought_signature=b"s"), StreamScript(signature="empty-part")))

Builders: :func:`openai_text`, :func:`openai_tool_calls` + :func:`tool_call` (``arguments`` may be a raw
string to send malformed JSON), :func:`gemini_text`, :func:`gemini_function_calls` + :func:`gemini_call`,
:func:`gemini_response` (any candidates / finish reason), :func:`transcription_reply`, :func:`error_reply`,
:func:`json_reply` (a verbatim body, e.g. a real provider payload), :func:`raw_reply`, :func:`hang`,
:func:`delayed`; :func:`openai_faults` names the usual fault matrix. A
queue item is a :class:`Reply` or a callable ``(RecordedRequest) -> Reply``.

Context limits — ``server.chat.context_limit = 16_000`` (or ``server.gemini.context_limit``) makes the endpoint
count each request's input tokens (:func:`count_openai_input` / :func:`count_gemini_input`: a GPT-style
pre-tokenizer, about one token per word or number group and per punctuation run, so a different count from
the app's estimate, like a real server's) and refuse a request over the limit exactly as the real API does
(:func:`openai_context_exceeded`, :func:`gemini_context_exceeded`) without using up a queued reply. The
count is recorded as ``RecordedRequest.input_tokens`` and reported as the answer's usage
(``prompt_tokens`` / ``promptTokenCount``).

Recording — every request is appended to ``server.requests`` and to its endpoint's ``.requests`` as a
:class:`RecordedRequest` (``method``, ``path``, ``query``, ``headers`` with lower-case names, raw ``body``,
parsed ``json`` or ``None``, multipart ``form`` fields and ``files``, the ``endpoint`` name and, for Gemini,
``model``; for a stream, ``streamed``, ``events_sent``, ``closed_by_client``, and ``answered`` set when the
server is done with it). ``server.reset()`` clears queues, defaults and records.

Fixtures (``tests/conftest.py``): ``fake_llm`` (function scope, a fresh server per test) and
``fake_llm_session`` (one server for the session; call ``reset()`` yourself). Both are stopped by the
fixture; a hanging reply is released as soon as the server stops. ``openai_llm`` / ``gemini_llm`` also
configure the app (env ``LLM_PROVIDER``, ``LLM_MODEL=fake-model``, ``LLM_API_KEY=CANARY_API_KEY``, no
retries, 5 s timeout; ``LLM_BASE_URL`` or ``GOOGLE_GEMINI_BASE_URL``) and yield the same server.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias
from urllib.parse import parse_qs, urlsplit

from tests.fake_llm_streams import (
    DEFAULT_STREAM,
    MALFORMED,
    StreamScript,
    gemini_error_event,
    gemini_stream_events,
    openai_error_event,
    openai_stream_events,
)

CANARY_API_KEY = "canary-KEY-4f1d9a7e2b6c0d3e"
"""An API key for tests to configure and then look for: it must never show up in a response, an
error or a log line (deliberately not shaped like a real key, so only exact redaction hides it)."""

CHAT = "chat"
TRANSCRIPTION = "transcription"
GEMINI = "gemini"


@dataclass(frozen=True)
class UploadedFile:
    """One file of a multipart request."""

    filename: str
    content_type: str
    data: bytes


@dataclass
class RecordedRequest:
    """A request as the fake server received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    endpoint: str | None
    model: str | None = None
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, UploadedFile] = field(default_factory=dict)
    streamed: bool = False
    """The answer went out as a stream (the request asked for one and the reply could be streamed)."""
    events_sent: int = 0
    """Stream events written so far (a ``[DONE]`` counts as one)."""
    event_times: list[float] = field(default_factory=list)
    """``time.perf_counter()`` right after each stream event was written (for latency benches)."""
    closed_by_client: bool = False
    """The client closed the connection before the stream's end (a stopped run, a cancelled read)."""
    answered: threading.Event = field(default_factory=threading.Event)
    """Set once the server is done with the request (the whole answer sent, cut or abandoned)."""
    input_tokens: int | None = None
    """Counted by an endpoint with a ``context_limit`` (``None`` otherwise)."""


@dataclass(frozen=True)
class Reply:
    """What the server answers: status, headers and body, optionally after a delay.

    ``delay_seconds`` waits before answering (cut short when the server stops); ``render`` when set
    replaces ``body`` with a body computed from the request (used by transcription formats). ``stream``
    says how the body is streamed when the request asks for a stream (``None``: sent whole regardless, as
    a server that cannot stream does); the builders of whole answers set the default script.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_seconds: float = 0.0
    render: Callable[[RecordedRequest], tuple[bytes, str]] | None = None
    stream: StreamScript | None = None


ReplySource: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


def _json_reply(
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
    return _json_reply(
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
    return _json_reply(
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
    return _json_reply(
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
    return _json_reply(payload, status, tuple((headers or {}).items()))


def raw_reply(body: bytes, status: int = 200, content_type: str = "application/json") -> Reply:
    """Exactly these bytes (e.g. an unreadable body)."""
    return Reply(status=status, body=body, content_type=content_type)


def hang(seconds: float = 30.0) -> Reply:
    """No answer for ``seconds`` (then an empty 504), for timeout tests. Released when the server stops."""
    return Reply(status=504, body=b"{}", delay_seconds=seconds)


def delayed(reply: Reply, seconds: float) -> Reply:
    """``reply``, sent after ``seconds`` (a stream's first byte comes that late)."""
    return dataclasses.replace(reply, delay_seconds=seconds)


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


# --- Context limits ---------------------------------------------------------------------------

_PRE_TOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")
"""GPT-4's pre-tokenizer, approximately: a real tokenizer makes at least one token of each of these pieces."""


def count_tokens(text: str) -> int:
    """Tokens of ``text`` the way a BPE server counts common words: one per pre-token."""
    return len(_PRE_TOKEN.findall(text))


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def count_openai_input(body: dict[str, Any]) -> int:
    """A chat completion's input tokens: 3 to prime the answer, 4 per message plus its text, calls and
    results, and the tools' JSON (OpenAI's own accounting, with :func:`count_tokens` for the tokenizer)."""
    total = 3 + (count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0)
    for message in body.get("messages") or []:
        total += 4
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        total += count_tokens(content or "")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += 4 + count_tokens(str(function.get("name", ""))) + count_tokens(str(function.get("arguments", "")))
    return total


def count_gemini_input(body: dict[str, Any]) -> int:
    """A ``generateContent`` request's input tokens: text, function calls and responses of every part of
    ``contents`` and ``systemInstruction``, and the tools' JSON."""
    contents = list(body.get("contents") or [])
    if isinstance(body.get("systemInstruction"), dict):
        contents.append(body["systemInstruction"])
    total = count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0
    for content in contents:
        total += 4
        for part in content.get("parts") or []:
            for key in ("text", "functionCall", "functionResponse"):
                if key in part:
                    total += count_tokens(_json_text(part[key]))
    return total


def openai_context_exceeded(limit: int, counted: int) -> Reply:
    """OpenAI's answer to a chat completion over the model's window (400, ``context_length_exceeded``)."""
    return _json_reply(
        {
            "error": {
                "message": f"This model's maximum context length is {limit} tokens. However, your messages "
                f"resulted in {counted} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        status=400,
    )


def gemini_context_exceeded(limit: int, counted: int) -> Reply:
    """Gemini's answer to a request over the model's input limit (400 ``INVALID_ARGUMENT``)."""
    return _json_reply(
        {
            "error": {
                "code": 400,
                "message": f"The input token count ({counted}) exceeds the maximum number of tokens allowed ({limit}).",
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )


def _with_usage(reply: Reply, counted: int) -> Reply:
    """``reply`` reporting ``counted`` input tokens, when it is a JSON answer with usage."""
    try:
        payload = json.loads(reply.body) if reply.status == 200 and reply.body else None
    except ValueError:
        return reply
    if not isinstance(payload, dict):
        return reply
    if isinstance(payload.get("usage"), dict):
        payload["usage"]["prompt_tokens"] = counted
    elif isinstance(payload.get("usageMetadata"), dict):
        payload["usageMetadata"]["promptTokenCount"] = counted
    else:
        return reply
    return dataclasses.replace(reply, body=json.dumps(payload).encode())


# --- Server -----------------------------------------------------------------------------------


class EndpointScript:
    """The replies of one endpoint: a FIFO queue, then ``default``; plus what it received."""

    def __init__(self, name: str, default: ReplySource) -> None:
        self.name = name
        self._initial_default = default
        self.default: ReplySource = default
        self._queue: deque[ReplySource] = deque()
        self.requests: list[RecordedRequest] = []
        self.context_limit: int | None = None
        """Input tokens above which a request is refused as the real API refuses it (``None``: no limit)."""
        self._lock = threading.Lock()

    def push(self, *replies: ReplySource) -> None:
        """Append replies to the queue, answered in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies are still unsent."""
        with self._lock:
            return len(self._queue)

    @property
    def last(self) -> RecordedRequest:
        """The most recent request (fails the test when there is none)."""
        assert self.requests, f"the fake {self.name} endpoint received no request"
        return self.requests[-1]

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.default = self._initial_default
            self.context_limit = None

    def next_reply(self, request: RecordedRequest) -> Reply:
        refusal = self._over_limit(request)
        with self._lock:
            self.requests.append(request)
            if refusal is not None:  # refused before any answer is made: the queued reply waits
                return refusal
            source = self._queue.popleft() if self._queue else self.default
        reply = source if isinstance(source, Reply) else source(request)
        return _with_usage(reply, request.input_tokens) if request.input_tokens is not None else reply

    def _over_limit(self, request: RecordedRequest) -> Reply | None:
        limit = self.context_limit
        if limit is None or not isinstance(request.json, dict) or self.name == TRANSCRIPTION:
            return None
        gemini = self.name == GEMINI
        request.input_tokens = (count_gemini_input if gemini else count_openai_input)(request.json)
        if request.input_tokens <= limit:
            return None
        return (gemini_context_exceeded if gemini else openai_context_exceeded)(limit, request.input_tokens)


def _parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, UploadedFile]]:
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    form: dict[str, str] = {}
    files: dict[str, UploadedFile] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        if filename is not None:
            files[name] = UploadedFile(filename, part.get_content_type(), data)
        else:
            form[name] = data.decode("utf-8", errors="replace")
    return form, files


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of clients may connect at once (the route's load tests)


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 (free port) playing OpenAI and Gemini. See the module doc."""

    def __init__(self) -> None:
        self.chat = EndpointScript(CHAT, openai_text("fake reply"))
        self.gemini = EndpointScript(GEMINI, gemini_text("fake reply"))
        self.transcription = EndpointScript(TRANSCRIPTION, transcription_reply("fake transcript"))
        self.requests: list[RecordedRequest] = []
        self.streaming = True
        """``False``: answer every request whole, as a server that cannot stream does."""
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> FakeLLMServer:
        self._httpd = _Server(("127.0.0.1", 0), functools.partial(_Handler, self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget queued replies, custom defaults and recorded requests."""
        for script in (self.chat, self.gemini, self.transcription):
            script.reset()
        self.requests.clear()
        self.streaming = True

    # addresses

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the fake LLM server is not running"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def gemini_base_url(self) -> str:
        return f"{self.base_url}/"

    # dispatch (called from handler threads)

    def _script_for(self, path: str) -> tuple[EndpointScript | None, str | None]:
        if path.endswith("/chat/completions"):
            return self.chat, None
        if path.endswith("/audio/transcriptions"):
            return self.transcription, None
        for method in (":generateContent", ":streamGenerateContent"):
            if path.endswith(method) and "/models/" in path:
                return self.gemini, path.rsplit("/models/", 1)[1].removesuffix(method)
        return None, None

    def _handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[Reply, RecordedRequest]:
        parts = urlsplit(target)
        script, model = self._script_for(parts.path)
        request = RecordedRequest(
            method=method,
            path=parts.path,
            query=parse_qs(parts.query),
            headers=headers,
            body=body,
            endpoint=script.name if script else None,
            model=model,
        )
        content_type = headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            request.form, request.files = _parse_multipart(content_type, body)
        elif body:
            try:
                request.json = json.loads(body)
            except ValueError:
                request.json = None
        self.requests.append(request)
        if script is None or method != "POST":
            return _json_reply(
                {"error": {"code": 404, "message": f"no fake endpoint {parts.path}"}}, status=404
            ), request
        reply = script.next_reply(request)
        if reply.render is not None:
            rendered, rendered_type = reply.render(request)
            reply = Reply(reply.status, rendered, rendered_type, reply.headers, reply.delay_seconds)
        return reply, request

    def stream_events(self, request: RecordedRequest, reply: Reply) -> tuple[list[bytes], bytes | None] | None:
        """The events of ``reply`` and the fault event to end with (``None`` for a cut), or ``None`` when
        the reply goes out whole: the request asked for no stream, the reply cannot stream, or streaming
        is off."""
        script = reply.stream
        if script is None or not self.streaming or reply.status != 200:
            return None
        body = json.loads(reply.body)
        if request.endpoint == CHAT and isinstance(request.json, dict) and request.json.get("stream") is True:
            options = request.json.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            events = openai_stream_events(body, script, include_usage)
            error = openai_error_event(script.error_message)
        elif request.endpoint == GEMINI and request.path.endswith(":streamGenerateContent"):
            events = gemini_stream_events(body, script)
            error = gemini_error_event(script.error_message)
        else:
            return None
        if script.fault is None:
            return events, None
        ending = {"cut": None, "malformed": MALFORMED, "error": error}[script.fault]
        return events[: script.fault_after], ending

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; ``False`` when the server is stopping (the reply is then dropped)."""
        return not self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection of ``fake``: records each request and answers it as scripted."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def __init__(self, fake: FakeLLMServer, *args: Any) -> None:
        self.fake = fake  # before the base class, which serves the connection inside __init__
        super().__init__(*args)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on recorded requests, not on stderr."""

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):  # a client dropped a kept-alive connection
            self.close_connection = True

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply, request = self.fake._handle(self.command, self.path, headers, body)
        try:
            self._answer(reply, request)
        finally:
            request.answered.set()

    def _answer(self, reply: Reply, request: RecordedRequest) -> None:
        if reply.delay_seconds and not self.fake._wait(reply.delay_seconds):
            self.close_connection = True
            return
        stream = self.fake.stream_events(request, reply)
        if stream is not None:
            self._stream(reply, request, *stream)
            return
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _stream(self, reply: Reply, request: RecordedRequest, events: list[bytes], ending: bytes | None) -> None:
        """``events`` as a chunked ``text/event-stream`` body (how providers stream), each written and
        flushed on its own; ``ending`` closes it, or, when ``None`` and the script has a fault, the
        connection is dropped without the body's last chunk."""
        assert reply.stream is not None
        request.streamed = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            for index, data in enumerate([*events, *([ending] if ending is not None else [])]):
                if index and reply.stream.delay_seconds and not self.fake._wait(reply.stream.delay_seconds):
                    self.close_connection = True
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                request.event_times.append(time.perf_counter())
                request.events_sent += 1
            if ending is None and reply.stream.fault == "cut":
                self.close_connection = True  # dropped mid-body: the connection cannot be reused
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            request.closed_by_client = True
            self.close_connection = True

    do_POST = _serve  # noqa: N815 - the stdlib's dispatch names
    do_GET = _serve  # noqa: N815
