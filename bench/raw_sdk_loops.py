"""The hand-written loops on the raw SDKs that ``bench_provider_loop`` and ``bench_long_history`` measure ours
against, and what they share with ours: the tool, the fake model's replies, the system prompt, the timeout.

Each loop does the least any streaming agent must do: it gathers the streamed text and tool calls, appends
the model's turn and the tool result itself, and sends the history again, through the SDK's typed call as its
documentation shows, streamed. Two ways per SDK: its sync client, and its async client on an event loop of the
calling thread (what ours drives).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import openai
from google import genai
from google.genai import types as gt
from openai.types.chat import ChatCompletionChunk, ChatCompletionStreamOptionsParam
from pydantic import Field

from agent_app.prompt import build_system_prompt
from agent_app.tool_args import ToolArgs
from agent_app.types import AgentContext, ToolDefinition, ToolEnvironment
from fake_llm import (
    RecordedRequest,
    Reply,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    openai_text,
    openai_tool_calls,
    tool_call,
)

TOOL_CALLS = 7
REQUESTS = TOOL_CALLS + 1
CONTEXT = AgentContext(project_id="bench", playback_time_ms=1000)
TIMEOUT_SECONDS = 60.0
TOOL_DESCRIPTION = "Count a step."


class StepArgs(ToolArgs):
    step: int = Field(description="Which step")


def step_result(step: int) -> dict[str, Any]:
    """What the tool answers; the raw loops call it with the SDK's arguments as they come."""
    return {"step": step, "ok": True}


def step_tool(args: StepArgs, env: ToolEnvironment) -> dict[str, Any]:
    return step_result(args.step)


def openai_reply(request: RecordedRequest) -> Reply:
    """A step per request until the turn has all its steps (only the calls since the latest user message count)."""
    messages = request.json["messages"]
    latest = max(i for i, message in enumerate(messages) if message["role"] == "user")
    done = sum(1 for message in messages[latest:] if message["role"] == "tool")
    if done < TOOL_CALLS:
        return openai_tool_calls(tool_call("step", {"step": done}, id=f"call_{done}"))
    return openai_text("All steps done.")


def gemini_reply(request: RecordedRequest) -> Reply:
    contents = request.json["contents"]
    latest = max(i for i, c in enumerate(contents) if c["role"] == "user" and any("text" in p for p in c["parts"]))
    done = sum(1 for c in contents[latest:] for p in c["parts"] if "functionResponse" in p)
    if done < TOOL_CALLS:
        return gemini_function_calls(gemini_call("step", {"step": done}, thought_signature=b"sig"))
    return gemini_text("All steps done.")


def system_prompt() -> str:
    """The same system prompt our route builds, so both loops send the same bytes."""
    schema = ToolDefinition("step", TOOL_DESCRIPTION, StepArgs, step_tool).to_schema()
    return build_system_prompt(CONTEXT, [schema])


SYSTEM_PROMPT = system_prompt()


USAGE: ChatCompletionStreamOptionsParam = {"include_usage": True}
OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "step",
            "description": TOOL_DESCRIPTION,
            "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]},
        },
    }
]
OpenAIFetch: TypeAlias = Callable[[list[Any]], list[ChatCompletionChunk]]
"""One streamed request's chunks, from the sync or the async SDK client."""


def openai_sync_fetch(client: openai.OpenAI) -> OpenAIFetch:
    def fetch(messages: list[Any]) -> list[ChatCompletionChunk]:
        return list(
            client.chat.completions.create(
                model="fake-model", messages=messages, tools=OPENAI_TOOLS, stream=True, stream_options=USAGE
            )
        )

    return fetch


def openai_async_fetch(client: openai.AsyncOpenAI, loop: asyncio.AbstractEventLoop) -> OpenAIFetch:
    async def chunks(messages: list[Any]) -> list[ChatCompletionChunk]:
        stream = await client.chat.completions.create(
            model="fake-model", messages=messages, tools=OPENAI_TOOLS, stream=True, stream_options=USAGE
        )
        return [chunk async for chunk in stream]

    return lambda messages: loop.run_until_complete(chunks(messages))


def raw_openai_loop(fetch: OpenAIFetch, prior: Sequence[Any] = ()) -> None:
    """``prior``: an earlier conversation in wire form, as a hand loop keeps it between turns."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, *prior, {"role": "user", "content": "Count."}]
    for _ in range(REQUESTS):
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        for chunk in fetch(messages):
            for choice in chunk.choices:
                if choice.delta.content:
                    text.append(choice.delta.content)
                for delta in choice.delta.tool_calls or []:
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = delta.id or call["id"]
                    if delta.function is not None:
                        call["name"] = delta.function.name or call["name"]
                        call["arguments"] += delta.function.arguments or ""
        if not calls:
            assert "".join(text)
            return
        wire = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()
        ]
        messages.append({"role": "assistant", "tool_calls": wire})
        for call in calls.values():
            result = step_result(json.loads(call["arguments"])["step"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"result": result})})
    raise AssertionError("the loop did not finish")


GeminiFetch: TypeAlias = Callable[[list[gt.Content], gt.GenerateContentConfig], list[gt.Part]]
"""One streamed request's parts, from the sync or the async SDK client."""


def gemini_sync_fetch(client: genai.Client) -> GeminiFetch:
    def fetch(contents: list[gt.Content], config: gt.GenerateContentConfig) -> list[gt.Part]:
        stream = client.models.generate_content_stream(model="fake-model", contents=contents, config=config)
        return [part for response in stream for part in response.candidates[0].content.parts or []]  # type: ignore[index, union-attr]

    return fetch


def gemini_async_fetch(client: genai.Client, loop: asyncio.AbstractEventLoop) -> GeminiFetch:
    async def parts(contents: list[gt.Content], config: gt.GenerateContentConfig) -> list[gt.Part]:
        stream = await client.aio.models.generate_content_stream(model="fake-model", contents=contents, config=config)
        return [part async for response in stream for part in response.candidates[0].content.parts or []]  # type: ignore[index, union-attr]

    return lambda contents, config: loop.run_until_complete(parts(contents, config))


def raw_gemini_loop(fetch: GeminiFetch, prior: Sequence[gt.Content] = ()) -> None:
    declaration = gt.FunctionDeclaration(
        name="step",
        description=TOOL_DESCRIPTION,
        parameters=gt.Schema(
            type=gt.Type.OBJECT, properties={"step": gt.Schema(type=gt.Type.INTEGER)}, required=["step"]
        ),
    )
    config = gt.GenerateContentConfig(
        system_instruction=SYSTEM_PROMPT,
        tools=[gt.Tool(function_declarations=[declaration])],
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[gt.Content] = [*prior, gt.Content(role="user", parts=[gt.Part(text="Count.")])]
    for _ in range(REQUESTS):
        parts = fetch(contents, config)
        calls = [part.function_call for part in parts if part.function_call is not None]
        if not calls:
            return
        contents.append(gt.Content(role="model", parts=parts))
        parts = [
            gt.Part.from_function_response(
                name=call.name or "", response={"output": step_result(int((call.args or {})["step"]))}
            )
            for call in calls
        ]
        contents.append(gt.Content(role="user", parts=parts))
    raise AssertionError("the loop did not finish")
