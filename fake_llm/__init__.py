"""A fake LLM server for tests and benches: a real HTTP server on 127.0.0.1 speaking the providers' wire formats.

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
    fake_llm.chat.push(held(openai_text("late"), gate))            # answer once the test sets gate
    fake_llm.chat.push(raw_reply(b"not json", status=200))        # unreadable body
    fake_llm.chat.push(lambda req: openai_text(req.json["model"]))  # computed from the request
    fake_llm.chat.default = openai_text("always this")             # when the queue is empty
    fake_llm.gemini.push(gemini_text("Hi"), gemini_function_calls(
        gemini_call("transcribe_video", {"assetId": "a1"}, id="", thought_signature=b"sig")))
    fake_llm.transcription.push(transcription_reply("hello world", segments=[(0.0, 1.2, "hello world")]))

Streaming: a whole answer built by :func:`openai_completion` / :func:`gemini_response` (and the builders on
top of them) is streamed when the request asks for a stream, in the providers' real wire formats
(:mod:`fake_llm.streams`): text in three pieces by default, tool-call arguments in fragments, usage
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
:func:`delayed`, :func:`held`; :func:`openai_faults` names the usual fault matrix. A
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

from fake_llm.recorded import CHAT, GEMINI, TRANSCRIPTION, RecordedRequest, UploadedFile
from fake_llm.replies import (
    CANARY_API_KEY,
    Reply,
    ReplySource,
    delayed,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_response,
    gemini_text,
    hang,
    held,
    json_payload_reply,
    json_reply,
    not_streamed,
    openai_completion,
    openai_faults,
    openai_text,
    openai_tool_calls,
    raw_reply,
    streamed,
    tool_call,
    transcription_reply,
)
from fake_llm.server import EndpointScript, FakeLLMServer
from fake_llm.streams import (
    DEFAULT_STREAM,
    DONE,
    MALFORMED,
    Fault,
    SignaturePlacement,
    StreamScript,
    UsageMode,
    event,
    gemini_error_event,
    gemini_stream_events,
    openai_error_event,
    openai_stream_events,
    split_text,
)
from fake_llm.tokens import (
    count_gemini_input,
    count_openai_input,
    count_tokens,
    gemini_context_exceeded,
    openai_context_exceeded,
    with_input_tokens,
)

__all__ = [
    "CANARY_API_KEY",
    "CHAT",
    "DEFAULT_STREAM",
    "DONE",
    "GEMINI",
    "MALFORMED",
    "TRANSCRIPTION",
    "EndpointScript",
    "FakeLLMServer",
    "Fault",
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "SignaturePlacement",
    "StreamScript",
    "UploadedFile",
    "UsageMode",
    "count_gemini_input",
    "count_openai_input",
    "count_tokens",
    "delayed",
    "error_reply",
    "event",
    "gemini_call",
    "gemini_context_exceeded",
    "gemini_error_event",
    "gemini_function_calls",
    "gemini_response",
    "gemini_stream_events",
    "gemini_text",
    "hang",
    "held",
    "json_payload_reply",
    "json_reply",
    "not_streamed",
    "openai_completion",
    "openai_context_exceeded",
    "openai_error_event",
    "openai_faults",
    "openai_stream_events",
    "openai_text",
    "openai_tool_calls",
    "raw_reply",
    "split_text",
    "streamed",
    "tool_call",
    "transcription_reply",
    "with_input_tokens",
]
