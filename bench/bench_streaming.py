"""Streamed answers: how soon the first text reaches the reader, and how many slow chats the route carries.

Three measurements, each against a baseline taken in the same run:

1. First text. The fake LLM server (127.0.0.1) streams an answer; the time from the server writing the first
   text event to that text reaching the reader. Baseline: the raw SDK's own stream (``openai`` sync client,
   ``google-genai`` sync client), the first content chunk its iterator yields. Ours: the typed handler
   (``ChatHandler.send``, what a run's orchestrator calls) with ``on_text``: the calling thread's event
   loop, the async SDK and the stream assembler. Target: at most 20 ms more.
2. Concurrency. 100 chats at once, streamed as Server-Sent Events through ``POST /api/agent/chat`` of a real
   ``streamlit run app.py``, against a model that takes 1 s before its first byte. Baseline: the same 100
   streamed requests straight to the fake model with the async SDK (the floor: 1 s plus the fake's own cost;
   the fake model runs in a process of its own). Target: all 100 done within 1.5 s wall. Also printed, as the
   machine may be shared: CPU milliseconds per chat of the server process (route, Streamlit's HTTP server and
   the SDK inside) against the raw SDK's own process, of the load generator (plain asyncio streams, this
   process) and of the fake model's process; CPU time does not grow with the machine's load as wall time
   does. The three processes share the machine's cores, so their CPU per chat bounds the wall time. Both
   the raw SDK and the server send on warm connections. ``--runs N`` runs it N times and says in how many
   the target was met (:mod:`bench.streaming_concurrency`).
3. Route overhead. One streamed chat at a time, the fake model answering at once, in this process (no sockets
   on our side): the route's Starlette endpoint called as an ASGI app (access check, body read and parsing,
   settings, SSE encoding) against the typed handler it calls (``ChatHandler.answer``), on the same event
   loop; the difference is what the route itself adds per request. The raw async SDK stream is printed
   beside them. Target (issue 10): at most 0.3 ms per request.

Run: ``.venv/bin/python -m bench.bench_streaming`` (``--only 2 --runs 10``: section 2 alone, ten
runs; ``--provider gemini``: section 2 against the Gemini API)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

import openai
from google import genai
from google.genai import types as gt
from starlette.applications import Starlette

from agent_app.chat_handler import ChatHandler
from agent_app.providers import clear_adapter_cache
from agent_app.routes.chat import chat_routes
from agent_app.settings import load_settings
from bench.bench_provider_loop import configure
from bench.streaming_concurrency import ANSWER, HELLO, SSE_BODY, concurrency, model_process, route_env
from fake_llm import FakeLLMServer, RecordedRequest, gemini_text, openai_text, streamed
from fake_llm.streams import StreamScript

ROUNDS = 60
OVERHEAD_ROUNDS = 200
WARMUP = 5


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

    ChatHandler(load_settings()).send(HELLO, on_text=on_text)
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
    await ChatHandler(load_settings()).answer(HELLO, _discard)


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.bench_streaming", description="Streamed answers: sections 1-3.")
    parser.add_argument("--runs", type=int, default=3, help="runs of section 2 (default 3)")
    parser.add_argument("--only", type=int, choices=(1, 2, 3), help="run this section alone")
    parser.add_argument(
        "--provider", choices=("openai-compatible", "gemini"), default="openai-compatible", help="API of section 2"
    )
    args = parser.parse_args(argv)
    if args.only in (None, 1):
        with FakeLLMServer() as server:
            first_text(server)
    if args.only in (None, 3):
        route_overhead()
    if args.only in (None, 2):
        concurrency(args.runs, args.provider)


if __name__ == "__main__":
    main()
