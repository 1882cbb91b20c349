"""End to end in one process: stores → Orchestrator → ChatHandler → real adapter →
real SDK → fake LLM server. Every fault ends as the spec says, with the user's message kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_app.chat_handler import ChatHandler
from agent_app.orchestrator import Orchestrator
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import AgentContext, ChatMessage, ToolResult
from fake_llm import (
    FakeLLMServer,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    openai_faults,
    openai_text,
    openai_tool_calls,
    tool_call,
)

CONTEXT = AgentContext(project_id="proj-1", playback_time_ms=1500)


class Session:
    """A page's worth of state: stores over one dict, the echo_context tool, a user message."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.chat = ChatStore(self.state)
        self.agent = AgentStore(self.state)
        self.agent.set_context(CONTEXT)
        self.registry = build_tool_registry(["echo_context"])
        self.user = self.chat.add_message({"role": "user", "content": "What is in my project?"})

    def run(self) -> list[ChatMessage]:
        Orchestrator(
            ChatHandler(load_settings(), self.registry.to_tool_schemas()), self.registry, self.chat, self.agent
        ).run()
        return self.chat.messages

    def results(self) -> list[ToolResult]:
        return [m.tool_result for m in self.chat.messages if m.tool_result is not None]


def test_tool_loop_end_to_end_openai_compatible(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_tool_calls(tool_call("echo_context", {}, id="")),
        openai_text("Your project proj-1 has no media yet."),
    )
    session = Session()
    messages = session.run()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1].content == "Your project proj-1 has no media yet."
    assert session.agent.status == "idle" and session.chat.error is None
    call_id = messages[1].tool_calls[0].id  # type: ignore[index]
    assert call_id and session.results()[0].result["context"]["projectId"] == "proj-1"
    tool_message = openai_llm.chat.last.json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == call_id
    assert json.loads(tool_message["content"])["result"]["context"]["projectId"] == "proj-1"


def test_tool_loop_end_to_end_gemini_replays_signatures(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(
        gemini_function_calls(gemini_call("echo_context", {}, thought_signature=b"sig-42")),
        gemini_text("Done."),
    )
    session = Session()
    messages = session.run()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert session.agent.status == "idle"
    contents = gemini_llm.gemini.last.json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][0]["thoughtSignature"]  # replayed from the stored message
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "echo_context"


@pytest.mark.parametrize("fault", list(openai_faults()))
def test_provider_faults_keep_the_users_message(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch, fault: str
) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "1")
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    openai_llm.chat.default = openai_faults()[fault]
    session = Session()
    messages = session.run()
    assert messages == [session.user]
    assert session.agent.status == "error"
    assert session.chat.error == "LLM provider error"
    assert session.chat.loading is False


def test_malformed_arguments_are_answered_and_the_model_recovers(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_tool_calls(tool_call("echo_context", '{"oops":', id="c1")),
        openai_tool_calls(tool_call("echo_context", "{}", id="c2")),
        openai_text("Recovered."),
    )
    session = Session()
    messages = session.run()
    assert messages[-1].content == "Recovered." and session.agent.status == "idle"
    first, second = session.results()
    assert first.error is not None and "not valid JSON" in first.error and first.tool_call_id == "c1"
    assert second.error is None
    second_request = openai_llm.chat.requests[1].json["messages"]
    assert json.loads(second_request[-1]["content"])["error"] == first.error
    assert second_request[-2]["tool_calls"][0]["function"]["arguments"] == '{"oops":'  # replayed as written


def test_unknown_tool_is_answered_and_the_model_recovers(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(openai_tool_calls(tool_call("summon_dragon", {}, id="c1")), openai_text("Sorry."))
    session = Session()
    messages = session.run()
    assert messages[-1].content == "Sorry." and session.agent.status == "idle"
    error = session.results()[0].error or ""
    assert "summon_dragon" in error and "echo_context" in error


def test_missing_configuration_is_shown_and_keeps_the_message(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.delenv("LLM_API_KEY")
    session = Session()
    assert session.run() == [session.user]
    assert session.chat.error == "Missing LLM configuration: LLM_API_KEY"
    assert session.agent.status == "error"
