"""The orchestrator over the real stack: the in-process route client, the route handler, the
provider adapters and the official SDKs doing real HTTP against the fake LLM server on 127.0.0.1.

The unit tests (``test_orchestrator.py``) pin the loop's rules with a scripted client; these show
that what the loop stores is what the adapters can send back: tool results reach the provider
mapped to the right call, and Gemini's thought signature survives the round trip.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from agent_app.chat_handler import ChatHandler
from agent_app.orchestrator import Orchestrator
from agent_app.registry import ToolRegistry
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.tool_args import ToolArgs
from agent_app.types import AgentContext, ToolDefinition, ToolEnvironment, ToolParameter
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    openai_text,
    openai_tool_calls,
    tool_call,
)
from tests.tool_support import make_tool

CONTEXT = AgentContext(project_id="p1", active_asset_id="a1")


def transcript_tool(seen: list[dict[str, Any]]) -> ToolDefinition[ToolArgs]:
    """A ``transcribe_video`` with the real tool's shape and a canned transcript (speech is not the point)."""

    def execute(args: dict[str, Any], env: ToolEnvironment) -> dict[str, Any]:
        seen.append(args)
        return {"assetId": args.get("assetId"), "segments": [{"startMs": 0, "endMs": 900, "text": "hello world"}]}

    tool = make_tool("transcribe_video", execute, ToolParameter(key="assetId", type="string", description="asset id"))
    return dataclasses.replace(tool, description="Transcribe an asset.")


def run_turn(registry: ToolRegistry) -> tuple[ChatStore, AgentStore]:
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    agent.set_context(CONTEXT)
    chat.add_message({"role": "user", "content": "What is said in the clip?"})
    Orchestrator(ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent).run()
    return chat, agent


def test_tool_call_then_final_answer_through_openai_compatible(openai_llm: FakeLLMServer) -> None:
    seen: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register_tool(transcript_tool(seen))
    openai_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {"assetId": "a1"}, id="call_1")),
        openai_text("They say hello world."),
    )

    chat, agent = run_turn(registry)

    assert chat.error is None, chat.error
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "assistant"]
    assert chat.messages[-1].content == "They say hello world."
    assert (agent.status, agent.active_tool, chat.loading) == ("idle", None, False)
    assert seen == [{"assetId": "a1"}]
    first, second = (r.json for r in openai_llm.chat.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["transcribe_video"]
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_1"
    assert "hello world" in tool_message["content"]
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "call_1"


def test_tool_call_then_final_answer_through_gemini_keeps_the_thought_signature(gemini_llm: FakeLLMServer) -> None:
    seen: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register_tool(transcript_tool(seen))
    gemini_llm.gemini.push(
        gemini_function_calls(gemini_call("transcribe_video", {"assetId": "a1"}, thought_signature=b"sig-123")),
        gemini_text("They say hello world."),
    )

    chat, agent = run_turn(registry)

    assert chat.error is None, chat.error
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "assistant"]
    assert chat.messages[1].tool_calls is not None and chat.messages[1].tool_calls[0].id  # synthesized id
    assert (agent.status, chat.loading) == ("idle", False)
    second = gemini_llm.gemini.requests[1].json
    parts = [part for content in second["contents"] for part in content["parts"]]
    call_part = next(part for part in parts if "functionCall" in part)
    assert base64.b64decode(call_part["thoughtSignature"]) == b"sig-123"
    response_part = next(part for part in parts if "functionResponse" in part)
    assert response_part["functionResponse"]["name"] == "transcribe_video"
    assert "hello world" in str(response_part["functionResponse"]["response"])


def test_provider_failure_sets_the_error_and_keeps_the_user_message(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(error_reply(500, f"upstream exploded, key {CANARY_API_KEY}"))

    chat, agent = run_turn(ToolRegistry())

    assert [m.role for m in chat.messages] == ["user"]
    assert chat.error is not None
    assert CANARY_API_KEY not in chat.error
    assert (agent.status, agent.active_tool, chat.loading) == ("error", None, False)


def test_a_run_sends_its_history_unchanged_on_every_request(openai_llm: FakeLLMServer) -> None:
    """Each request of a run resends the history before it exactly as it was sent, then the new messages."""

    def execute(args: dict[str, Any], env: object) -> dict[str, Any]:
        return {"step": args["n"], "text": "said " * 50}

    registry = ToolRegistry()
    registry.register_tool(make_tool("step", execute, ToolParameter(key="n", type="integer")))
    openai_llm.chat.push(
        openai_tool_calls(tool_call("step", {"n": 1}, id="c1")),
        openai_tool_calls(tool_call("step", {"n": 2}, id="c2")),
        openai_text("done"),
    )
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    chat.add_message({"role": "user", "content": "Go."})
    Orchestrator(ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent).run()
    assert chat.messages[-1].content == "done"
    sent = [request.json["messages"] for request in openai_llm.chat.requests]
    assert len(sent) == 3
    assert sent[1][: len(sent[0])] == sent[0] and sent[2][: len(sent[1])] == sent[1]
    assert sent[2][-1] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": '{"result":{"step":2,"text":"' + "said " * 50 + '"}}',
    }
