"""Streamed answers: how soon the first text reaches the reader, and how many slow chats the route carries.

Three measurements, each against a baseline taken in the same run:

1. First text. The fake LLM server (127.0.0.1) streams an answer; the time from the server writing the first
   text event to that text reaching the reader. Baseline: the raw SDK's own stream (``openai`` sync client,
   ``google-genai`` sync client), the first content chunk its iterator yields. Ours: the typed handler
   (``handle_chat``, what the page's and a run's client call) with ``on_text``: the calling thread's event
   loop, the async SDK and the stream assembler. Target: at most 20 ms more.
2. Concurrency. 100 chats at once, streamed as Server-Sent Events through ``POST /api/agent/chat`` of a real
   ``streamlit run app.py``, against a model that takes 1 s before its first byte. Baseline: the same 100
   streamed requests straight to the fake model with the async SDK (the floor: 1 s plus the fake's own cost;
   the fake model runs in a process of its own). Target: all 100 done within 1.5 s wall. Also printed, as the
   machine may be shared: CPU milliseconds per chat of the server process (route, Streamlit's HTTP server and
   the SDK inside) against the raw SDK's own process, of the load generator (plain asyncio streams, this
   process) and of the fake model's process; CPU time does not grow with the machine's load as wall time
   does. The three processes share the machine's cores, so their CPU per chat bounds the wall time.

3. Route overhead. One streamed chat at a time, the fake model answering at once, in this process (no sockets
   on our side): the route's Starlette endpoint called as an ASGI app (access check, body read and parsing,
   settings, SSE encoding) against the typed handler it calls (``handle_chat_async``), on the same event
   loop; the difference is what the route itself adds per request. The raw async SDK stream is printed
   beside them. Target (issue 10): at most 0.3 ms per request.

Run: ``.venv/bin/python -m bench.bench_streaming``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
from google import genai
from google.genai import types as gt
from starlette.applications import Starlette

from agent_app.chat_handler import handle_chat, handle_chat_async
from agent_app.providers import clear_adapter_cache
from agent_app.routes.chat import chat_routes
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatRequest
from bench.bench_provider_loop import configure
from bench.streamlit_server import run_streamlit
from fake_llm import FakeLLMServer, RecordedRequest, delayed, gemini_text, openai_text, streamed
from fake_llm.process import BaseURLs, server_process
from fake_llm.streams import StreamScript

ROUNDS = 60
OVERHEAD_ROUNDS = 200
WARMUP = 5
CONCURRENT = 100
MODEL_LATENCY = 1.0
ANSWER = "The interview starts with a question about the harbour, then the answer goes on for a while."
HELLO = ChatRequest(messages=[ChatMessage(role="user", content="Hello")])
SSE_BODY = json.dumps(HELLO.to_wire()).encode()
"""The body of a chat request asking Hello, as the route reads it."""


def first_text_delay(request: RecordedRequest, seen_at: float, first_text_event: int) -> float:
    return seen_at - request.event_times[first_text_event]


def raw_openai(client: openai.OpenAI, server: FakeLLMServer) -> float:
    seen_at = 0.0
    with client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "Hello"}], stream=True
    ) as stream:
        for chunk in stream:
            if not seen_at and chunk.choices and chunk.choices[0].delta.content:
                seen_at = time.perf_counter()
    return first_text_delay(server.chat.last, seen_at, 1)  # OpenAI's first event carries only the role


def raw_gemini(client: genai.Client, server: FakeLLMServer) -> float:
    seen_at = 0.0
    for response in client.models.generate_content_stream(model="fake-model", contents="Hello"):
        if not seen_at and response.text:
            seen_at = time.perf_counter()
    return first_text_delay(server.gemini.last, seen_at, 0)


def ours(server: FakeLLMServer, provider: str) -> float:
    seen: list[float] = []

    def on_text(delta: str) -> None:
        if not seen:
            seen.append(time.perf_counter())

    handle_chat(HELLO, on_text=on_text)
    last = server.chat.last if provider == "openai-compatible" else server.gemini.last
    return first_text_delay(last, seen[0], 1 if provider == "openai-compatible" else 0)


def paired(mine: Callable[[], float], theirs: Callable[[], float]) -> tuple[list[float], list[float]]:
    for _ in range(WARMUP):
        mine()
        theirs()
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(mine())
        b.append(theirs())
    return a, b


def first_text(server: FakeLLMServer) -> None:
    server.chat.default = streamed(openai_text(ANSWER), StreamScript(pieces=8))
    server.gemini.default = streamed(gemini_text(ANSWER), StreamScript(pieces=8))
    raw_openai_client = openai.OpenAI(api_key="bench-key", base_url=server.openai_base_url, max_retries=0)
    raw_gemini_client = genai.Client(api_key="bench-key", http_options=gt.HttpOptions(base_url=server.gemini_base_url))
    print(f"1. first text event written -> first text in the reader's hands, median / p90 of {ROUNDS} (ms)")
    print(f"{'provider':<18} {'raw SDK':>16} {'ours':>16} {'ours - raw':>11} {'ratio':>6}")
    for provider, raw in (
        ("openai-compatible", lambda: raw_openai(raw_openai_client, server)),
        ("gemini", lambda: raw_gemini(raw_gemini_client, server)),
    ):
        configure(provider, server)
        mine, theirs = paired(partial(ours, server, provider), raw)
        m, t = statistics.median(mine) * 1000, statistics.median(theirs) * 1000
        m90, t90 = (statistics.quantiles(x, n=10)[-1] * 1000 for x in (mine, theirs))
        print(f"{provider:<18} {t:>7.2f} / {t90:>6.2f} {m:>7.2f} / {m90:>6.2f} {m - t:>11.2f} {m / t:>6.2f}")
    print("target: ours - raw <= 20 ms")


def script_model(latency: float, server: FakeLLMServer) -> None:
    """The fake model's answer, after ``latency`` seconds (run in the model's own process)."""
    server.chat.default = delayed(streamed(openai_text(ANSWER), StreamScript(pieces=8)), latency)


@contextmanager
def model_process(latency: float) -> Iterator[BaseURLs]:
    """A fake model answering after ``latency`` seconds, running in its own process (its threads do not
    share a GIL with the clients)."""
    with server_process(partial(script_model, latency)) as urls:
        yield urls


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def raw_concurrent(base_url: str) -> float:
    client = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0, timeout=30)

    async def one() -> None:
        stream = await client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "Hello"}], stream=True
        )
        async for _ in stream:
            pass

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


def chat_request(url: str) -> bytes:
    """The bytes of one streamed chat request to ``url`` (HTTP/1.1, the connection kept open)."""
    parts = urlsplit(url)
    body = SSE_BODY
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked HTTP body (``Transfer-Encoding: chunked``, how the route streams) read to its last chunk."""
    body = bytearray()
    while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
        body += (await reader.readexactly(size + 2))[:-2]
    await reader.readexactly(2)  # the empty line after the last chunk
    return bytes(body)


def answered(head: bytes, body: bytes) -> bool:
    """Whether the response is a 200 event stream whose last event is ``done`` carrying the whole answer."""
    if not head.startswith(b"HTTP/1.1 200 ") or b"text/event-stream" not in head:
        return False
    name, _, data = body.rstrip(b"\n").rpartition(b"\n\n")[2].partition(b"\n")
    return name == b"event: done" and json.loads(data.removeprefix(b"data: "))["content"] == ANSWER


async def route_concurrent(url: str) -> tuple[float, int]:
    """``CONCURRENT`` streamed chats through the route at once, each on a connection of its own: the wall
    time and how many ended with the whole answer.

    The load generator is plain asyncio streams, not an HTTP client library: it is not what is measured, and
    on a 2-core machine its CPU competes with the server's (httpx with httpx-sse cost 3-4 ms per chat here,
    close to the server's own). Each answer is still read as it streams, to the end, and checked."""
    parts = urlsplit(url)
    request = chat_request(url)

    async def one() -> tuple[asyncio.StreamWriter, bool]:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        chunked = b"transfer-encoding: chunked" in head.lower()
        return writer, chunked and answered(head, await read_chunked(reader))

    started = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    elapsed = time.perf_counter() - started
    for writer, _ in results:
        writer.close()
    return elapsed, sum(done for _, done in results)


@dataclass(frozen=True)
class Round:
    """One round: 100 chats straight to the model with the raw SDK, then 100 through the route."""

    raw_wall: float
    route_wall: float
    done: int
    raw_cpu_ms: float
    """CPU per chat of the raw SDK's process (this one)."""
    server_cpu_ms: float
    """CPU per chat of the server process (route + HTTP server + the SDK it drives)."""
    client_cpu_ms: float
    """CPU per chat of the route's load generator (this process)."""
    model_cpu_ms: float
    """CPU per chat of the fake model's process while it answered the route."""


def concurrency() -> None:
    with model_process(MODEL_LATENCY) as model:
        rounds, stack = measure_concurrency(model)
    print(f"\n2. {CONCURRENT} concurrent chats, latency {MODEL_LATENCY:.1f} s, {len(rounds)} runs, server on {stack}")
    print("       ------------ wall (s) ------------  ------------- CPU per chat (ms) -------------")
    print("run     raw SDK   route  done  ratio   raw SDK  server  client   model   extra")
    extras = [r.server_cpu_ms - r.raw_cpu_ms for r in rounds]
    rows = [*((str(i), r, e) for i, (r, e) in enumerate(zip(rounds, extras, strict=True), 1))]
    for name, r, extra in [*rows, ("median", _median(rounds), statistics.median(extras))]:
        print(
            f"{name:<6} {r.raw_wall:>8.3f} {r.route_wall:>7.3f} {r.done:>5} {r.route_wall / r.raw_wall:>5.2f} "
            f"{r.raw_cpu_ms:>8.2f} {r.server_cpu_ms:>7.2f} {r.client_cpu_ms:>7.2f} {r.model_cpu_ms:>7.2f} {extra:>7.2f}"
        )
    median = _median(rounds)
    total = median.server_cpu_ms + median.client_cpu_ms + median.model_cpu_ms
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print("target: all done within 1.5 s wall; 'extra' = server CPU per chat over the raw SDK's (what the route and")
    print("its HTTP server add to the same SDK request); client = the load generator (asyncio streams)")
    print(
        f"CPU budget: server + client + model = {total:.2f} ms per chat, {total * CONCURRENT / 1000:.2f} s for "
        f"{CONCURRENT} chats; the server alone {median.server_cpu_ms * CONCURRENT / 1000:.2f} s on its one event loop"
    )


def _median(rounds: list[Round]) -> Round:
    return Round(*(statistics.median(getattr(r, name) for r in rounds) for name in Round.__dataclass_fields__))


def route_env(base_url: str) -> dict[str, str]:
    """The settings of a route answering with the fake model at ``base_url``, open to loopback clients."""
    return {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_BASE_URL": base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": "bench-key",
        "LLM_MAX_RETRIES": "0",
        "AGENT_API_TOKEN": "",
    }


def server_stack(pid: int) -> str:
    """Which event loop and HTTP parser the server process loaded (uvicorn picks uvloop and httptools when
    they are installed), from its memory map."""
    with open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as maps:
        loaded = maps.read()
    loop = "uvloop" if "/uvloop/" in loaded else "asyncio"
    parser = "httptools" if "/httptools/" in loaded else "h11"
    return f"{loop} + {parser}"


def measure_concurrency(model: BaseURLs) -> tuple[list[Round], str]:
    """Three rounds of: the raw async SDK straight to the model, then the route, 100 chats at once each."""
    base_url = model.openai_base_url
    env = route_env(base_url)
    me = os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        env["AGENT_DATA_DIR"] = str(Path(tmp) / "data")
        with run_streamlit(env, Path(tmp)) as app:
            url = f"{app.base_url}/api/agent/chat"
            asyncio.run(route_concurrent(url))  # warm: the first request imports the SDK
            stack = server_stack(app.process.pid)
            rounds = []
            for _ in range(3):
                mine = cpu_seconds(me)
                raw_wall = asyncio.run(raw_concurrent(base_url))
                raw_cpu, mine, server = cpu_seconds(me) - mine, cpu_seconds(me), cpu_seconds(app.process.pid)
                model_cpu = cpu_seconds(model.pid)
                route_wall, done = asyncio.run(route_concurrent(url))
                client_cpu, server_cpu = cpu_seconds(me) - mine, cpu_seconds(app.process.pid) - server
                model_cpu = cpu_seconds(model.pid) - model_cpu
                cpu_ms = (raw_cpu, server_cpu, client_cpu, model_cpu)
                rounds.append(Round(raw_wall, route_wall, done, *(cpu * 1000 / CONCURRENT for cpu in cpu_ms)))
    return rounds, stack


SSE_SCOPE: dict[str, Any] = {
    "type": "http",
    "asgi": {"version": "3.0", "spec_version": "2.3"},
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/api/agent/chat",
    "raw_path": b"/api/agent/chat",
    "query_string": b"",
    "root_path": "",
    "headers": [
        (b"host", b"127.0.0.1:8501"),
        (b"accept", b"text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(SSE_BODY)).encode()),
    ],
    "client": ("127.0.0.1", 50000),
    "server": ("127.0.0.1", 8501),
}


async def via_route(app: Starlette) -> None:
    """One SSE chat through the route's endpoint, as the HTTP server would call it."""
    body = [{"type": "http.request", "body": SSE_BODY, "more_body": False}]
    sent: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if body:
            return body.pop()
        await asyncio.Future()  # no disconnect: waits until the response is over
        raise AssertionError

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    await app(SSE_SCOPE, receive, send)
    assert b"event: done" in b"".join(sent)


def _discard(delta: str) -> None:
    """The handler's text sink, doing nothing (the route's queue is part of what the route costs)."""


async def via_handler() -> None:
    await handle_chat_async(HELLO, settings=load_settings(), on_text=_discard)


async def via_raw_sdk(client: openai.AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "Hello"}], stream=True
    )
    async for _ in stream:
        pass


async def route_overhead_rounds(base_url: str) -> dict[str, list[tuple[float, float]]]:
    """``(wall, CPU)`` seconds of each request of each case, the cases taking turns."""
    app = Starlette(routes=chat_routes())
    raw = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0)
    cases: dict[str, Callable[[], Awaitable[None]]] = {
        "raw SDK": lambda: via_raw_sdk(raw),
        "handler": via_handler,
        "route": lambda: via_route(app),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for index in range(WARMUP + OVERHEAD_ROUNDS):
        for name, case in cases.items():
            wall, cpu = time.perf_counter(), time.process_time()
            await case()
            if index >= WARMUP:
                times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    await raw.close()
    return times


def route_overhead() -> None:
    with model_process(0.0) as model:
        os.environ.update(route_env(model.openai_base_url))
        clear_adapter_cache()
        times = asyncio.run(route_overhead_rounds(model.openai_base_url))
    print(f"\n3. one streamed chat at a time, in process, median of {OVERHEAD_ROUNDS} (ms per request)")
    print(f"{'':<5} {'raw SDK':>8} {'handler':>8} {'route':>8} {'route - handler':>16}")
    for column, label in enumerate(("wall", "CPU")):
        median = {name: statistics.median(pair[column] for pair in pairs) * 1000 for name, pairs in times.items()}
        print(
            f"{label:<5} {median['raw SDK']:>8.3f} {median['handler']:>8.3f} {median['route']:>8.3f} "
            f"{median['route'] - median['handler']:>16.3f}"
        )
    print("target: route - handler <= 0.3 ms (handler - raw SDK is bench_provider_loop's); CPU is this process's")
    print("(the fake model runs in its own), which the machine's other load moves less than the wall clock")


def main() -> None:
    with FakeLLMServer() as server:
        first_text(server)
    route_overhead()
    concurrency()


if __name__ == "__main__":
    main()
