"""Section 2 of ``bench_streaming``: 100 streamed chats at once through the route of a real server, against
the same 100 streams on the raw async SDK.

Each run: 100 chats through ``POST /api/agent/chat`` of a real ``streamlit run app.py``, then the same 100
streamed requests straight to the fake model with the raw async SDK called as its documentation shows (the
same system prompt, question and tools the route sends; the floor: the model's latency plus the SDK's and
the fake's own cost). The runs take turns (ours, raw, ours, raw...), so a change in the machine's load
falls on both. The raw SDK's client is made once and warmed by a first burst, like the server's (whose
clients stay for the server's life): both send on warm connections. The fake model runs in a process of its
own. Target (issue 19): our wall time at most 1.15x the raw SDK's, the median of the runs' ratios.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
from google import genai
from google.genai import types as gt
from openai.types.chat import ChatCompletionStreamOptionsParam

from agent_app.chat_handler import current_tool_schemas
from agent_app.llm_config import GEMINI, OPENAI_COMPATIBLE
from agent_app.prompt import build_system_prompt
from agent_app.providers.gemini_request import request_config
from agent_app.providers.openai_request import tool_schema_to_openai
from agent_app.settings import Settings
from agent_app.types import ChatMessage, ChatRequest
from bench.process_cpu import cpu_seconds
from fake_llm import FakeLLMServer, delayed, gemini_text, openai_text, streamed
from fake_llm.process import BaseURLs, server_process
from fake_llm.streams import StreamScript
from testsupport.streamlit_server import run_streamlit

CONCURRENT = 100
MODEL_LATENCY = 1.0
TARGET_RATIO = 1.15
RUNS = 5
ANSWER = "The interview starts with a question about the harbour, then the answer goes on for a while."
HELLO = ChatRequest(messages=[ChatMessage(role="user", content="Hello")])
SSE_BODY = json.dumps(HELLO.to_wire()).encode()
"""The body of a chat request asking Hello, as the route reads it."""


def script_model(latency: float, server: FakeLLMServer) -> None:
    """The fake model's answer on both APIs, after ``latency`` seconds (run in the model's own process)."""
    server.chat.default = delayed(streamed(openai_text(ANSWER), StreamScript(pieces=8)), latency)
    server.gemini.default = delayed(streamed(gemini_text(ANSWER), StreamScript(pieces=8)), latency)


@contextmanager
def model_process(latency: float) -> Iterator[BaseURLs]:
    """A fake model answering after ``latency`` seconds, running in its own process (its threads do not
    share a GIL with the clients)."""
    with server_process(partial(script_model, latency)) as urls:
        yield urls


RawClient = openai.AsyncOpenAI | genai.Client


def raw_client(provider: str, model: BaseURLs) -> RawClient:
    """The raw SDK's client of ``provider`` at the fake model."""
    if provider == GEMINI:
        return genai.Client(
            api_key="bench-key",
            http_options=gt.HttpOptions(
                base_url=model.gemini_base_url,
                async_client_args={"limits": httpx2.Limits(max_connections=1000, max_keepalive_connections=100)},
            ),
        )
    return openai.AsyncOpenAI(api_key="bench-key", base_url=model.openai_base_url, max_retries=0, timeout=30)


@dataclass(frozen=True)
class RawRequest:
    """What the route sends the model for ``HELLO`` (system prompt, question, the enabled tools), written
    once for the raw SDK's own typed call, so both sides ask the model the same thing."""

    system_prompt: str
    openai_tools: list[Any]
    gemini_config: gt.GenerateContentConfig

    @classmethod
    def of_route(cls, settings: Settings) -> RawRequest:
        schemas = current_tool_schemas(settings)
        prompt = build_system_prompt(None, schemas)
        return cls(prompt, [tool_schema_to_openai(s) for s in schemas], request_config(prompt, schemas))


USAGE: ChatCompletionStreamOptionsParam = {"include_usage": True}


async def raw_concurrent(client: RawClient, request: RawRequest) -> float:
    """``CONCURRENT`` streamed requests at once on ``client``: the wall time."""
    question = HELLO.messages[0].content
    messages: list[Any] = [
        {"role": "system", "content": request.system_prompt},
        {"role": "user", "content": question},
    ]

    async def one() -> None:
        if isinstance(client, genai.Client):
            async for _ in await client.aio.models.generate_content_stream(
                model="fake-model", contents=question, config=request.gemini_config
            ):
                pass
            return
        stream = await client.chat.completions.create(
            model="fake-model", messages=messages, tools=request.openai_tools, stream=True, stream_options=USAGE
        )
        async for _ in stream:
            pass

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    return time.perf_counter() - started


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
    """One run: 100 chats through the route, then the same 100 straight to the model with the raw SDK."""

    route_wall: float
    raw_wall: float
    done: int
    raw_cpu_ms: float
    """CPU per chat of the raw SDK's process (this one)."""
    server_cpu_ms: float
    """CPU per chat of the server process (route + HTTP server + the SDK it drives)."""
    client_cpu_ms: float
    """CPU per chat of the route's load generator (this process)."""
    model_cpu_ms: float
    """CPU per chat of the fake model's process while it answered the route."""

    @property
    def ratio(self) -> float:
        return self.route_wall / self.raw_wall


def concurrency(runs: int = RUNS, provider: str = OPENAI_COMPATIBLE) -> None:
    """Section 2 with ``runs`` runs against ``provider``'s API, printed."""
    with model_process(MODEL_LATENCY) as model:
        rounds, stack = asyncio.run(measure_concurrency(model, runs, provider))
    print(
        f"\n2. {CONCURRENT} concurrent chats, {provider}, latency {MODEL_LATENCY:.1f} s, {len(rounds)} runs "
        f"(ours, raw, ours, raw...), server on {stack}"
    )
    print("       ------------ wall (s) ------------  ------------- CPU per chat (ms) -------------")
    print("run       route raw SDK  done  ratio   raw SDK  server  client   model   extra")
    extras = [r.server_cpu_ms - r.raw_cpu_ms for r in rounds]
    for i, (r, extra) in enumerate(zip(rounds, extras, strict=True), 1):
        print(_row(str(i), r, r.ratio, extra))
    median = _median(rounds)
    ratio = statistics.median(r.ratio for r in rounds)
    print(_row("median", median, ratio, statistics.median(extras)))
    total = median.server_cpu_ms + median.client_cpu_ms + median.model_cpu_ms
    all_done = sum(r.done == CONCURRENT for r in rounds)
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(
        f"target: route wall / raw SDK wall <= {TARGET_RATIO}, median of the runs' ratios: {ratio:.2f}, {verdict}; "
        f"all {CONCURRENT} answered in {all_done}/{len(rounds)} runs"
    )
    print(f"ratio of the median walls: {median.route_wall / median.raw_wall:.2f}")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print("'extra' = server CPU per chat over the raw SDK's (what the route and its HTTP server add to the same")
    print("SDK request, both on warm connections); client = the load generator (asyncio streams)")
    print(
        f"CPU budget: server + client + model = {total:.2f} ms per chat, {total * CONCURRENT / 1000:.2f} s for "
        f"{CONCURRENT} chats; the server alone {median.server_cpu_ms * CONCURRENT / 1000:.2f} s on its one event loop"
    )


def _row(name: str, r: Round, ratio: float, extra: float) -> str:
    return (
        f"{name:<6} {r.route_wall:>7.3f} {r.raw_wall:>8.3f} {r.done:>5.0f} {ratio:>6.2f} "
        f"{r.raw_cpu_ms:>8.2f} {r.server_cpu_ms:>7.2f} {r.client_cpu_ms:>7.2f} {r.model_cpu_ms:>7.2f} {extra:>7.2f}"
    )


def _median(rounds: list[Round]) -> Round:
    return Round(*(statistics.median(getattr(r, name) for r in rounds) for name in Round.__dataclass_fields__))


def route_env(base_url: str, provider: str = OPENAI_COMPATIBLE) -> dict[str, str]:
    """The settings of a route answering with the fake model at ``base_url`` (its OpenAI-compatible or Gemini
    base URL, as ``provider`` says), open to loopback clients."""
    where = {"GOOGLE_GEMINI_BASE_URL": base_url} if provider == GEMINI else {"LLM_BASE_URL": base_url}
    return {
        "LLM_PROVIDER": provider,
        **where,
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


async def measure_concurrency(model: BaseURLs, runs: int, provider: str) -> tuple[list[Round], str]:
    """``runs`` rounds of: the route, then the raw async SDK straight to the model, 100 chats at once each;
    one warm-up burst of each first."""
    env = route_env(model.gemini_base_url if provider == GEMINI else model.openai_base_url, provider)
    me = os.getpid()
    raw = raw_client(provider, model)
    request = RawRequest.of_route(Settings())
    with tempfile.TemporaryDirectory() as tmp:
        env["AGENT_DATA_DIR"] = str(Path(tmp) / "data")
        with run_streamlit(env, Path(tmp)) as app:
            url = f"{app.base_url}/api/agent/chat"
            await route_concurrent(url)  # warm: the first request imports the SDK
            await raw_concurrent(raw, request)  # warm: the client's connections, as the server's are
            stack = server_stack(app.process.pid)
            rounds = []
            for _ in range(runs):
                mine, server, model_cpu = cpu_seconds(me), cpu_seconds(app.process.pid), cpu_seconds(model.pid)
                route_wall, done = await route_concurrent(url)
                client_cpu, server_cpu = cpu_seconds(me) - mine, cpu_seconds(app.process.pid) - server
                model_cpu, mine = cpu_seconds(model.pid) - model_cpu, cpu_seconds(me)
                raw_wall = await raw_concurrent(raw, request)
                raw_cpu = cpu_seconds(me) - mine
                cpu_ms = (raw_cpu, server_cpu, client_cpu, model_cpu)
                rounds.append(Round(route_wall, raw_wall, done, *(cpu * 1000 / CONCURRENT for cpu in cpu_ms)))
    await (raw.aio.aclose() if isinstance(raw, genai.Client) else raw.close())
    return rounds, stack
