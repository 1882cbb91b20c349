"""What our stack adds per model request as a conversation grows, against the raw SDK in the same run.

The 8-request tool loop of ``bench_provider_loop`` runs after an earlier conversation of ``PRIOR_TURNS`` turns,
each a question, a ``transcribe_video`` call, its transcript (about 20 KB of JSON) and an answer. A hand loop on
the SDK keeps that history in the SDK's request types between turns and only appends, and sends it through the
SDK's typed call, as documented (the baseline of ``bench_provider_loop``); ours reads it from the chat store
when the run starts (as the page does) and sends it on every request, fitted, validated and converted. Printed:
CPU per request of both and their ratio, which shows how our own per-message work grows with the history
against the SDK's.

Run: ``.venv/bin/python -m bench.bench_long_history``
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
from typing import Any

import openai
from google import genai
from google.genai import types as gt

from agent_app.registry import ToolRegistry
from agent_app.types import ChatMessage, ToolCall, ToolDefinition, ToolResult
from bench import raw_sdk_loops as raw_loops
from bench.bench_provider_loop import compare, configure, our_loop, script
from bench.raw_sdk_loops import REQUESTS, TIMEOUT_SECONDS, TOOL_DESCRIPTION, StepArgs, step_tool
from fake_llm.process import server_process

PRIOR_TURNS = (0, 10)
SEGMENTS = 250
"""Segments of each earlier transcript: about 20 KB of JSON, a few minutes of speech."""


def transcript(turn: int) -> dict[str, Any]:
    return {
        "assetId": f"asset-{turn}",
        "segments": [
            {"startMs": i * 1200, "endMs": i * 1200 + 1100, "text": f"Segment {i} of take {turn}, as it was said."}
            for i in range(SEGMENTS)
        ],
    }


def prior_messages(turns: int) -> list[ChatMessage]:
    """The earlier conversation as our store holds it."""
    messages: list[ChatMessage] = []
    for turn in range(turns):
        call = ToolCall(id=f"prior_{turn}", name="transcribe_video", args={"assetId": f"asset-{turn}"})
        result = ToolResult(tool_call_id=call.id, name=call.name, result=transcript(turn))
        messages += [
            ChatMessage(role="user", content=f"What is said in take {turn}?"),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(role="tool", content="Transcribed", tool_result=result),
            ChatMessage(role="assistant", content=f"Take {turn} is about the weather. " * 10),
        ]
    return messages


def prior_openai(messages: list[ChatMessage]) -> list[Any]:
    """The same conversation as a hand loop keeps it for the OpenAI SDK."""
    wire: list[Any] = []
    for message in messages:
        if message.tool_calls:
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for c in message.tool_calls
            ]
            wire.append({"role": "assistant", "tool_calls": calls})
        elif message.tool_result is not None:
            content = json.dumps({"result": message.tool_result.result})
            wire.append({"role": "tool", "tool_call_id": message.tool_result.tool_call_id, "content": content})
        else:
            wire.append({"role": message.role, "content": message.content})
    return wire


def prior_gemini(messages: list[ChatMessage]) -> list[gt.Content]:
    """The same conversation as a hand loop keeps it for google-genai, in its types."""
    contents: list[dict[str, Any]] = []
    for message in messages:
        if message.tool_calls:
            parts = [{"functionCall": {"name": c.name, "args": c.args}} for c in message.tool_calls]
            contents.append({"role": "model", "parts": parts})
        elif message.tool_result is not None:
            result = message.tool_result
            response = {"name": result.name, "response": {"output": result.result}}
            contents.append({"role": "user", "parts": [{"functionResponse": response}]})
        else:
            role = "model" if message.role == "assistant" else "user"
            contents.append({"role": role, "parts": [{"text": message.content}]})
    return [gt.Content.model_validate(content) for content in contents]


def main() -> None:
    registry = ToolRegistry()
    registry.register_tool(ToolDefinition("step", TOOL_DESCRIPTION, StepArgs, step_tool))
    os.environ["LLM_CONTEXT_TOKENS"] = "1000000"  # the whole history is sent: this measures sending, not fitting
    event_loop = asyncio.new_event_loop()
    print(f"{REQUESTS}-request tool loop after an earlier conversation; ratio = ours / the SDK called as documented")
    print(f"{'provider':<18} {'earlier turns':>13} {'history KB':>10} {'clock':<5} {'sdk ms/req':>11}", end="")
    print(f" {'ours ms/req':>12} {'ratio':>6}")
    with server_process(script) as server:
        key, timeout = "bench-key", TIMEOUT_SECONDS  # configured as ours (bench_provider_loop says why)
        gemini_options = gt.HttpOptions(base_url=server.gemini_base_url, timeout=round(timeout * 1000))
        async_openai = openai.AsyncOpenAI(api_key=key, base_url=server.openai_base_url, max_retries=0, timeout=timeout)
        async_gemini = genai.Client(api_key=key, http_options=gemini_options)
        for provider in ("openai-compatible", "gemini"):
            configure(provider, server)
            for turns in PRIOR_TURNS:
                prior = prior_messages(turns)
                size = sum(len(m.model_dump_json()) for m in prior) // 1000
                if provider == "gemini":
                    contents = prior_gemini(prior)
                    fetch = raw_loops.gemini_async_fetch(async_gemini, event_loop)
                    raw = functools.partial(raw_loops.raw_gemini_loop, fetch, contents)
                else:
                    wire = prior_openai(prior)
                    chat_fetch = raw_loops.openai_async_fetch(async_openai, event_loop)
                    raw = functools.partial(raw_loops.raw_openai_loop, chat_fetch, wire)
                for clock_name, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
                    result = compare(functools.partial(our_loop, registry, prior), raw, clock)
                    print(
                        f"{provider:<18} {turns:>13} {size:>10} {clock_name:<5} {result.raw_ms:>11.3f} "
                        f"{result.ours_ms:>12.3f} {result.ratio:>6.2f}"
                    )


if __name__ == "__main__":
    main()
