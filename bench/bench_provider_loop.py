"""What our agent stack costs per model request, as a ratio to the same loop on each SDK called as documented.

The same 8-request tool loop (7 tool calls, then an answer) runs against the fake LLM server on 127.0.0.1
(answering at once, in a process of its own: its threads do not share this process's GIL, and this process's
CPU time is the clients' alone) two ways, for both providers, streamed, interleaved round by round:

* the SDK: a hand loop on the official SDK's async client (``openai`` / ``google-genai``) on an event loop of
  this thread, as ours runs it, through its typed call, with the same system prompt and tool declaration
  (:mod:`bench.raw_sdk_loops`);
* ours: ``Orchestrator`` + stores + ``ChatHandler`` (the typed handler: validation, settings, context
  fitting, system prompt) → adapter → the same SDK.

Printed per run: client CPU time per request of each loop and their ratio (ours / the SDK's), then the median
ratio of the runs. Target: at most :data:`TARGET_RATIO` for both providers. ``--wall`` adds the wall-clock rows
(what a user waits, loopback HTTP included); ``--sync`` the SDK's sync client as another row of reference.

Run: ``.venv/bin/python -m bench.bench_provider_loop`` (``--runs N``: N interleaved runs, 5 by default)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai
from google import genai
from google.genai import types as gt

from agent_app.chat_handler import ChatHandler
from agent_app.orchestrator import Orchestrator
from agent_app.providers import clear_adapter_cache
from agent_app.registry import ToolRegistry
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolDefinition
from bench.raw_sdk_loops import (
    CONTEXT,
    REQUESTS,
    TIMEOUT_SECONDS,
    TOOL_CALLS,
    TOOL_DESCRIPTION,
    StepArgs,
    gemini_async_fetch,
    gemini_reply,
    gemini_sync_fetch,
    openai_async_fetch,
    openai_reply,
    openai_sync_fetch,
    raw_gemini_loop,
    raw_openai_loop,
    step_tool,
)
from fake_llm import FakeLLMServer
from fake_llm.process import BaseURLs, server_process

ROUNDS = 40
WARMUP = 5


def our_loop(registry: ToolRegistry, prior: Sequence[ChatMessage] = ()) -> None:
    """A run as the server starts one: ``prior`` (an earlier conversation) is loaded as fresh objects, as a run
    reads it from storage, goes into the chat store, the question is added, and the loop runs on the loaded
    messages."""
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    loaded = [message.model_copy() for message in prior]
    chat.load_messages(loaded)
    question = chat.add_message(ChatMessage(role="user", content="Count."))
    Orchestrator(ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent).run(
        [*loaded, question], CONTEXT
    )
    # Checked without reading the history back (the page's cost, not a request's): 7 calls, 7 results, an answer.
    assert agent.status == "idle" and chat.error is None, (agent.status, chat.error)
    assert len(chat.unsaved) == 2 + 2 * TOOL_CALLS, chat.unsaved


@dataclass(frozen=True)
class Comparison:
    """Per model request, in milliseconds: the baseline, ours, and our overhead (median of the paired
    per-round differences, which cancels the machine's drift better than a difference of medians)."""

    raw_ms: float
    ours_ms: float
    overhead_ms: float

    @property
    def ratio(self) -> float:
        return self.ours_ms / self.raw_ms


def compare(ours: Callable[[], None], raw: Callable[[], None], clock: Callable[[], float]) -> Comparison:
    """Both loops, interleaved round by round so both see the same machine state, timed by ``clock``."""
    for _ in range(WARMUP):
        ours()
        raw()
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(ROUNDS):
        started = clock()
        ours()
        mine.append(clock() - started)
        started = clock()
        raw()
        theirs.append(clock() - started)
    per_request = 1000 / REQUESTS
    return Comparison(
        raw_ms=statistics.median(theirs) * per_request,
        ours_ms=statistics.median(mine) * per_request,
        overhead_ms=statistics.median(a - b for a, b in zip(mine, theirs, strict=True)) * per_request,
    )


def configure(provider: str, server: FakeLLMServer | BaseURLs) -> None:
    os.environ.update(
        {
            "LLM_PROVIDER": provider,
            "LLM_MODEL": "fake-model",
            "LLM_API_KEY": "bench-key",
            "LLM_BASE_URL": server.openai_base_url,
            "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
            "LLM_MAX_RETRIES": "0",
            "LLM_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
        }
    )
    clear_adapter_cache()


def script(server: FakeLLMServer) -> None:
    """The fake server's answers (run in the server's process)."""
    server.chat.default = openai_reply
    server.gemini.default = gemini_reply


TARGET_RATIO = 1.25
"""Our client CPU per request at most this many times the SDK's, called as documented."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.bench_provider_loop", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs (default 5)")
    parser.add_argument("--wall", action="store_true", help="the wall-clock rows too")
    parser.add_argument("--sync", action="store_true", help="the SDK's sync client as a row of reference too")
    args = parser.parse_args(argv)
    registry = ToolRegistry()
    registry.register_tool(ToolDefinition("step", TOOL_DESCRIPTION, StepArgs, step_tool))
    loop = asyncio.new_event_loop()  # the async SDK loops' own loop, in this thread
    clocks = [("cpu", time.process_time)] + ([("wall", time.perf_counter)] if args.wall else [])
    with server_process(script) as server:
        # The SDK clients get the timeout ours is configured with (LLM_TIMEOUT_SECONDS' default, 60 s): its
        # per-read deadlines are a cost of the SDK's transport, the same for both loops.
        key, url, timeout = "bench-key", server.openai_base_url, TIMEOUT_SECONDS
        gemini_options = gt.HttpOptions(base_url=server.gemini_base_url, timeout=round(timeout * 1000))
        async_openai = openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0, timeout=timeout)
        async_gemini = genai.Client(api_key=key, http_options=gemini_options)
        sdk: dict[tuple[str, str], Callable[[], None]] = {
            ("openai-compatible", "async"): lambda: raw_openai_loop(openai_async_fetch(async_openai, loop)),
            ("gemini", "async"): lambda: raw_gemini_loop(gemini_async_fetch(async_gemini, loop)),
        }
        if args.sync:
            sync_openai = openai.OpenAI(api_key=key, base_url=url, max_retries=0, timeout=timeout)
            sync_gemini = genai.Client(api_key=key, http_options=gemini_options)
            sdk[("openai-compatible", "sync")] = lambda: raw_openai_loop(openai_sync_fetch(sync_openai))
            sdk[("gemini", "sync")] = lambda: raw_gemini_loop(gemini_sync_fetch(sync_gemini))
        print(f"{REQUESTS}-request tool loop ({TOOL_CALLS} tool calls + answer), streamed; {ROUNDS} rounds per run,")
        print("ours and the SDK's interleaved round by round, the medians per request; cpu: this process's CPU time")
        columns = f"{'run':>3} {'provider':<18} {'sdk':<5} {'clock':<5} {'sdk ms/req':>11} {'ours ms/req':>12}"
        print(f"{columns} {'ratio':>6}")
        ratios: dict[tuple[str, str, str], list[float]] = {}
        for run in range(1, args.runs + 1):
            for (provider, kind), raw_loop in sdk.items():
                configure(provider, server)
                for clock_name, clock in clocks:
                    result = compare(lambda: our_loop(registry), raw_loop, clock)
                    ratios.setdefault((provider, kind, clock_name), []).append(result.ratio)
                    print(
                        f"{run:>3} {provider:<18} {kind:<5} {clock_name:<5} {result.raw_ms:>11.3f} "
                        f"{result.ours_ms:>12.3f} {result.ratio:>6.2f}"
                    )
        print(f"median ratio of {args.runs} runs (target: cpu, async, <= {TARGET_RATIO:.2f} for both providers)")
        for (provider, kind, clock_name), values in ratios.items():
            median = statistics.median(values)
            verdict = ("met" if median <= TARGET_RATIO else "MISSED") if (kind, clock_name) == ("async", "cpu") else ""
            listed = " ".join(f"{value:.2f}" for value in values)
            print(f"{provider:<18} {kind:<5} {clock_name:<5} {listed} | median {median:.2f} {verdict}")


if __name__ == "__main__":
    main()
