"""The fake LLM server itself: a threaded HTTP server on 127.0.0.1 routing each request to its endpoint's
script (:class:`EndpointScript`), recording it, and writing the reply whole or as a stream.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import select
import socket
import threading
import time
from collections import deque
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_llm.recorded import CHAT, GEMINI, TRANSCRIPTION, RecordedRequest, UploadedFile
from fake_llm.replies import Reply, ReplySource, gemini_text, json_payload_reply, openai_text, transcription_reply
from fake_llm.streams import (
    MALFORMED,
    gemini_error_event,
    gemini_stream_events,
    openai_error_event,
    openai_stream_events,
)
from fake_llm.tokens import (
    count_gemini_input,
    count_openai_input,
    gemini_context_exceeded,
    openai_context_exceeded,
    with_input_tokens,
)

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
        return with_input_tokens(reply, request.input_tokens) if request.input_tokens is not None else reply

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

    def _handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes, client_port: int = 0
    ) -> tuple[Reply, RecordedRequest]:
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
            client_port=client_port,
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
            return json_payload_reply(
                {"error": {"code": 404, "message": f"no fake endpoint {parts.path}"}}, status=404
            ), request
        reply = script.next_reply(request)
        if reply.render is not None:
            rendered, rendered_type = reply.render(request)
            reply = dataclasses.replace(reply, body=rendered, content_type=rendered_type, render=None, stream=None)
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
        reply, request = self.fake._handle(self.command, self.path, headers, body, self.client_address[1])
        try:
            self._answer(reply, request)
        finally:
            request.answered.set()

    def _answer(self, reply: Reply, request: RecordedRequest) -> None:
        if reply.delay_seconds and not self._hold(reply.delay_seconds, request, reply.release):
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

    def _hold(self, seconds: float, request: RecordedRequest, release: threading.Event | None = None) -> bool:
        """Wait ``seconds`` as scripted (less once ``release`` is set), watching the connection: ``False`` when
        the server is stopping or the client closed it meanwhile (recorded as ``closed_by_client``: a client
        that left stops a slow model)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.fake._stopping.is_set():
            if release is not None and release.is_set():
                break
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if not readable:
                continue
            try:
                closed = self.connection.recv(1, socket.MSG_PEEK) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed = True
            if closed:
                request.closed_by_client = True
                return False
            self.fake._wait(min(left, 0.05))  # a pipelined next request waits its turn
        return not self.fake._stopping.is_set()

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
                if index and reply.stream.delay_seconds and not self._hold(reply.stream.delay_seconds, request):
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
