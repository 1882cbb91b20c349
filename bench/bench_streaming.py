"""Streamed answers: how soon the first text reaches the reader, and how many slow chats the route carries.

Two measurements, each against a baseline taken in the same run:

1. First text. The fake LLM server (127.0.0.1) streams an answer; the time from the server writing the first
   text event to that text reaching the reader. Baseline: the raw SDK's own stream (``openai`` sync client,
   ``google-genai`` sync client), the first content chunk its iterator yields. Ours: the typed handler
   (``ChatHandler.send``, what a run's orchestrator calls) with ``on_text``: the calling thread's event
   loop, the async SDK and the stream assembler. Target: at most 20 ms more.
2. Concurrency. 100 chats at once, streamed as Server-Sent Events through ``POST /api/agent/chat`` of a real
   ``streamlit run app.py``, against a model that takes 1 s before its first byte. Baseline: the same 100
   streamed requests (system prompt, question, tools) straight to the fake model with the async SDK called
   as its documentation shows (the floor: 1 s plus the SDK's and the fake's own cost; the fake model runs in
   a process of its own). The runs take turns, ours then raw, five by default. Target (issue 19): our wall
   time at most 1.15x the raw SDK's, the median of the runs' ratios. Also printed, beside each run's ratio:
   CPU milliseconds per chat of the server process (route, Streamlit's HTTP server and the SDK inside)
   against the raw SDK's own process, of the load generator (plain asyncio streams, this process) and of the
   fake model's process; the three share the machine's cores, so their CPU per chat bounds the wall time
   (:mod:`bench.streaming_concurrency`).

The route's own cost per request, one at a time (the endpoint against the handler it calls), is not a
section: it is a fraction of a millisecond no user sees, and what the route adds where it could show, under
load, is section 2's server CPU per chat against the raw SDK's.

Run: ``.venv/bin/python -m bench.bench_streaming`` (``--only 2 --runs 9``: section 2 alone, nine
runs; ``--provider gemini``: section 2 against the Gemini API)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import openai
from google import genai
from google.genai import types as gt

from agent_app.chat_handler import ChatHandler
from agent_app.settings import load_settings
from bench.bench_provider_loop import configure
from bench.streaming_concurrency import ANSWER, HELLO, RUNS, concurrency
from fake_llm import FakeLLMServer, RecordedRequest, gemini_text, openai_text, streamed
from fake_llm.streams import StreamScript

ROUNDS = 60
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.bench_streaming", description="Streamed answers: sections 1-2.")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs of section 2 (default {RUNS})")
    parser.add_argument("--only", type=int, choices=(1, 2), help="run this section alone")
    parser.add_argument(
        "--provider", choices=("openai-compatible", "gemini"), default="openai-compatible", help="API of section 2"
    )
    args = parser.parse_args(argv)
    if args.only in (None, 1):
        with FakeLLMServer() as server:
            first_text(server)
    if args.only in (None, 2):
        concurrency(args.runs, args.provider)


if __name__ == "__main__":
    main()
