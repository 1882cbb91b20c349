"""What our agent stack adds per model request, against a hand-written loop on the raw SDK.

The same 8-request tool loop (7 tool calls, then an answer) runs against the fake LLM server on
127.0.0.1 (answering at once) two ways, for both providers, in one run:

* baseline: a hand loop on the official SDK (``openai`` / ``google-genai``) with the same system prompt and
  tool declaration, appending the model's turn and the tool result itself — the least any agent must do;
* ours: ``Orchestrator`` + stores + ``InProcessChatClient`` → the typed handler (validation, settings, system
  prompt; no JSON in between) → adapter → the same SDK.

Both loops pay the same SDK and HTTP costs, so the difference is our overhead. Printed: milliseconds per
model request and the ratio of total times. Target: at most 0.3 ms per request over the raw SDK.

Run: ``.venv/bin/python -m bench.bench_provider_loop``
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai
from google import genai
from google.genai import types as gt
from pydantic import Field

from agent_app.chat_clients import InProcessChatClient
from agent_app.orchestrator import Orchestrator
from agent_app.prompt import build_system_prompt
from agent_app.providers import clear_adapter_cache
from agent_app.registry import ToolRegistry
from agent_app.stores import AgentStore, ChatStore
from agent_app.tool_args import ToolArgs
from agent_app.types import AgentContext, ChatMessage, ToolDefinition, ToolEnvironment
from tests.fake_llm import (
    FakeLLMServer,
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
ROUNDS = 40
WARMUP = 5
CONTEXT = AgentContext(project_id="bench", playback_time_ms=1000)
TOOL_DESCRIPTION = "Count a step."


class StepArgs(ToolArgs):
    step: int = Field(description="Which step")


def step_result(step: int) -> dict[str, Any]:
    """What the tool answers; the raw loops call it with the SDK's arguments as they come."""
    return {"step": step, "ok": True}


def step_tool(args: StepArgs, env: ToolEnvironment) -> dict[str, Any]:
    return step_result(args.step)


def openai_reply(request: RecordedRequest) -> Reply:
    done = sum(1 for message in request.json["messages"] if message["role"] == "tool")
    if done < TOOL_CALLS:
        return openai_tool_calls(tool_call("step", {"step": done}, id=f"call_{done}"))
    return openai_text("All steps done.")


def gemini_reply(request: RecordedRequest) -> Reply:
    done = sum(1 for c in request.json["contents"] for p in c["parts"] if "functionResponse" in p)
    if done < TOOL_CALLS:
        return gemini_function_calls(gemini_call("step", {"step": done}, thought_signature=b"sig"))
    return gemini_text("All steps done.")


def system_prompt() -> str:
    """The same system prompt our route builds, so both loops send the same bytes."""
    schema = ToolDefinition("step", TOOL_DESCRIPTION, StepArgs, step_tool).to_schema()
    return build_system_prompt(CONTEXT, [schema])


SYSTEM_PROMPT = system_prompt()


def raw_openai_loop(client: openai.OpenAI) -> None:
    tools: list[Any] = [
        {
            "type": "function",
            "function": {
                "name": "step",
                "description": TOOL_DESCRIPTION,
                "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]},
            },
        }
    ]
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Count."}]
    for _ in range(REQUESTS):
        message = client.chat.completions.create(model="fake-model", messages=messages, tools=tools).choices[0].message
        if not message.tool_calls:
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)  # type: ignore[union-attr]
            result = step_result(args["step"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps({"result": result})})
    raise AssertionError("the loop did not finish")


def raw_gemini_loop(client: genai.Client) -> None:
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
    contents: list[gt.Content] = [gt.Content(role="user", parts=[gt.Part(text="Count.")])]
    for _ in range(REQUESTS):
        response = client.models.generate_content(model="fake-model", contents=contents, config=config)
        if not response.function_calls:
            return
        contents.append(response.candidates[0].content)  # type: ignore[index, arg-type]
        parts = [
            gt.Part.from_function_response(
                name=call.name or "", response={"output": step_result(int((call.args or {})["step"]))}
            )
            for call in response.function_calls
        ]
        contents.append(gt.Content(role="user", parts=parts))
    raise AssertionError("the loop did not finish")


def our_loop(registry: ToolRegistry) -> None:
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    chat.add_message(ChatMessage(role="user", content="Count."))
    Orchestrator(InProcessChatClient(registry), registry, chat, agent).run(context=CONTEXT)
    messages = chat.messages
    assert agent.status == "idle" and messages[-1].content == "All steps done.", (agent.status, chat.error)
    assert len(messages) == 2 + 2 * TOOL_CALLS


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


def configure(provider: str, server: FakeLLMServer) -> None:
    os.environ.update(
        {
            "LLM_PROVIDER": provider,
            "LLM_MODEL": "fake-model",
            "LLM_API_KEY": "bench-key",
            "LLM_BASE_URL": server.openai_base_url,
            "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
            "LLM_MAX_RETRIES": "0",
        }
    )
    clear_adapter_cache()


def main() -> None:
    registry = ToolRegistry()
    registry.register_tool(ToolDefinition("step", TOOL_DESCRIPTION, StepArgs, step_tool))
    with FakeLLMServer() as server:
        server.chat.default = openai_reply
        server.gemini.default = gemini_reply
        raw_openai = openai.OpenAI(api_key="bench-key", base_url=server.openai_base_url, max_retries=0)
        raw_gemini = genai.Client(api_key="bench-key", http_options=gt.HttpOptions(base_url=server.gemini_base_url))
        cases: list[tuple[str, Callable[[], None]]] = [
            ("openai-compatible", lambda: raw_openai_loop(raw_openai)),
            ("gemini", lambda: raw_gemini_loop(raw_gemini)),
        ]
        print(f"{REQUESTS}-request tool loop ({TOOL_CALLS} tool calls + answer), median of {ROUNDS} rounds")
        print("wall: what a user waits (fake server and loopback HTTP included, the same for both loops);")
        print("cpu: CPU time of the calling thread only (our code + SDK), which other load disturbs much less.")
        header = f"{'provider':<18} {'clock':<5} {'raw SDK ms/req':>15} {'ours ms/req':>12} {'overhead ms/req':>16}"
        print(f"{header} {'ratio':>6}")
        for provider, raw_loop in cases:
            configure(provider, server)
            for clock_name, clock in (("wall", time.perf_counter), ("cpu", time.thread_time)):
                result = compare(lambda: our_loop(registry), raw_loop, clock)
                print(
                    f"{provider:<18} {clock_name:<5} {result.raw_ms:>15.3f} {result.ours_ms:>12.3f} "
                    f"{result.overhead_ms:>16.3f} {result.ratio:>6.2f}"
                )
        print("target: overhead <= 0.300 ms per request")


if __name__ == "__main__":
    main()
