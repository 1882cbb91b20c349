"""The openai-compatible adapter: the real ``openai`` SDK against the fake server, asserting the wire."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import ProviderError, create_adapter, get_adapter
from agent_app.providers.openai_compatible import OpenAICompatibleAdapter, parse_arguments
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolCall, ToolParameter, ToolResult, ToolSchema
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    error_reply,
    hang,
    openai_completion,
    openai_text,
    openai_tool_calls,
    raw_reply,
    tool_call,
)
from tests.chat_support import stream_answer

TRANSCRIBE = ToolSchema(
    name="transcribe_video",
    description="Transcribe a video",
    parameters=[ToolParameter(key="assetId", type="string", required=False, description="Which asset")],
)


def _params(*messages: ChatMessage, tools: list[ToolSchema] | None = None, system: str = "SYS") -> dict[str, Any]:
    """The adapter's ``chat`` arguments."""
    return {
        "messages": list(messages) or [ChatMessage(role="user", content="Hello")],
        "system_prompt": system,
        "tool_schemas": tools or [],
    }


def _chat(params: dict[str, Any] | None = None) -> Any:
    return stream_answer(get_adapter(load_llm_config(load_settings())), **(params or _params()))


def test_adapter_selected_by_config_openai_compatible(openai_llm: FakeLLMServer) -> None:
    adapter = get_adapter(load_llm_config(load_settings()))
    assert isinstance(adapter, OpenAICompatibleAdapter)
    assert stream_answer(adapter, **_params()).content == "fake reply"
    assert openai_llm.chat.last.path == "/v1/chat/completions"
    assert openai_llm.chat.last.headers["authorization"] == f"Bearer {CANARY_API_KEY}"


def test_adapter_translates_tool_schemas_to_wire_format(openai_llm: FakeLLMServer) -> None:
    required = ToolSchema(
        name="cut",
        description="Cut",
        parameters=[
            ToolParameter(key="startMs", type="integer", required=True),
            ToolParameter(key="tags", type="array"),
        ],
    )
    _chat(_params(tools=[TRANSCRIBE, required]))
    tools = openai_llm.chat.last.json["tools"]
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "transcribe_video",
            "description": "Transcribe a video",
            "parameters": {
                "type": "object",
                "properties": {"assetId": {"type": "string", "description": "Which asset"}},
            },
        },
    }
    assert tools[1]["function"]["parameters"]["required"] == ["startMs"]
    # OpenAI refuses an array without items ("array schema missing items", invalid_function_parameters).
    assert tools[1]["function"]["parameters"]["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}


def test_no_tools_sends_no_tools_key(openai_llm: FakeLLMServer) -> None:
    _chat()
    assert "tools" not in openai_llm.chat.last.json
    assert openai_llm.chat.last.json["model"] == "fake-model"


def test_history_maps_to_chat_messages_with_system_prompt_first(openai_llm: FakeLLMServer) -> None:
    call = ToolCall(id="call_1", name="transcribe_video", args={"assetId": "a1"})
    history = [
        ChatMessage(role="user", content="What is said?"),
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(
            role="tool",
            content="ok",
            tool_result=ToolResult(tool_call_id="call_1", name="transcribe_video", result={"text": "hi"}),
        ),
        ChatMessage(
            role="tool",
            tool_result=ToolResult(tool_call_id="call_2", name="transcribe_video", error="no such asset"),
        ),
        ChatMessage(role="assistant", content="It says hi."),
    ]
    _chat(_params(*history, system="You are a video editor"))
    wire = openai_llm.chat.last.json["messages"]
    assert wire[0] == {"role": "system", "content": "You are a video editor"}
    assert wire[1] == {"role": "user", "content": "What is said?"}
    assert wire[2]["role"] == "assistant" and "content" not in wire[2]
    [call] = wire[2]["tool_calls"]
    assert call["id"] == "call_1" and call["type"] == "function" and call["function"]["name"] == "transcribe_video"
    assert json.loads(call["function"]["arguments"]) == {"assetId": "a1"}
    assert (wire[3]["role"], wire[3]["tool_call_id"]) == ("tool", "call_1")
    assert json.loads(wire[3]["content"]) == {"result": {"text": "hi"}}
    assert json.loads(wire[4]["content"]) == {"error": "no such asset"}
    assert wire[5] == {"role": "assistant", "content": "It says hi."}


def test_tool_calls_are_read_from_their_presence_not_finish_reason(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {"assetId": "a1"}, id="call_x"), finish_reason="stop"),
        openai_text("plain", finish_reason="tool_calls"),
    )
    first = _chat(_params(tools=[TRANSCRIBE]))
    assert first.tool_calls == [ToolCall(id="call_x", name="transcribe_video", args={"assetId": "a1"})]
    second = _chat(_params(tools=[TRANSCRIBE]))
    assert second.content == "plain" and second.tool_calls is None


def test_empty_and_repeated_call_ids_are_synthesized(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_tool_calls(
            tool_call("transcribe_video", {}, id=""),
            tool_call("transcribe_video", {}, id="call_0"),
            tool_call("transcribe_video", {}, id="call_0"),
        )
    )
    ids = [call.id for call in _chat(_params(tools=[TRANSCRIBE])).tool_calls]
    assert ids[1] == "call_0"
    assert len(set(ids)) == 3 and all(ids)


def test_malformed_arguments_become_a_call_with_an_arguments_error(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_tool_calls(
            tool_call("transcribe_video", '{"assetId": "a1"', id="c1"),
            tool_call("transcribe_video", "[1, 2]", id="c2"),
            tool_call("transcribe_video", "", id="c3"),
        )
    )
    calls = _chat(_params(tools=[TRANSCRIBE])).tool_calls
    assert calls[0].args == {} and "not valid JSON" in (calls[0].arguments_error or "")
    assert calls[1].args == {} and "JSON object" in (calls[1].arguments_error or "")
    assert calls[2].args == {} and calls[2].arguments_error is None


def test_arguments_sent_as_an_object_are_accepted(openai_llm: FakeLLMServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "transcribe_video", "arguments": {"assetId": "a1"}}}
    openai_llm.chat.push(openai_completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"))
    calls = _chat(_params(tools=[TRANSCRIBE])).tool_calls
    assert calls == [ToolCall(id="c1", name="transcribe_video", args={"assetId": "a1"})]


def test_a_refusal_is_the_answer(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(
        openai_completion({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    )
    assert _chat().content == "I can't help with that."


def test_parse_arguments_accepts_objects() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments({"a": 1}) == ({"a": 1}, None)
    assert parse_arguments(None) == ({}, None)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(error_reply(500), id="500"),
        pytest.param(error_reply(401, f"Incorrect API key provided: {CANARY_API_KEY}"), id="401"),
        pytest.param(error_reply(429), id="429"),
        pytest.param(raw_reply(b"<html>gateway</html>"), id="unreadable-html"),
        pytest.param(raw_reply(b'{"choices": []}'), id="no-choices"),
        pytest.param(openai_text(""), id="empty-content"),
        pytest.param(openai_completion({"role": "assistant", "content": None}, "length"), id="null-content"),
    ],
)
def test_provider_failures_raise_provider_error_without_the_key(openai_llm: FakeLLMServer, reply: Any) -> None:
    openai_llm.chat.push(reply)
    with pytest.raises(ProviderError) as caught:
        _chat()
    assert CANARY_API_KEY not in str(caught.value)


def test_a_404_hints_at_the_base_url(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(error_reply(404, "404 page not found"))  # what Ollama says without /v1
    with pytest.raises(ProviderError, match="LLM_BASE_URL"):
        _chat()


def test_429_is_retried_then_succeeds(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "3")
    faults = (error_reply(status, retry_after_ms=1) for status in (408, 429, 503))  # the README's 408/429/5xx
    openai_llm.chat.push(*faults, openai_text("ok"))
    assert _chat().content == "ok"
    assert len(openai_llm.chat.requests) == 4


def test_429_after_all_retries_is_a_provider_error(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "1")
    openai_llm.chat.push(error_reply(429, retry_after_ms=1), error_reply(429, retry_after_ms=1), openai_text("late"))
    with pytest.raises(ProviderError, match="429"):
        _chat()
    assert len(openai_llm.chat.requests) == 2


def test_hang_past_the_timeout_is_a_provider_error(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    openai_llm.chat.push(hang(10))
    with pytest.raises(ProviderError, match="Timeout"):
        _chat()


def test_adapter_and_client_are_reused_per_configuration(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    first = get_adapter(load_llm_config(load_settings()))
    assert get_adapter(load_llm_config(load_settings())) is first
    assert isinstance(first, OpenAICompatibleAdapter)
    _chat()
    _chat()
    again = get_adapter(load_llm_config(load_settings()))
    assert isinstance(again, OpenAICompatibleAdapter) and again is first

    async def clients() -> tuple[object, object]:
        return first.client, first.client

    one, same = asyncio.run(clients())
    other, _ = asyncio.run(clients())
    assert one is same and other is not one  # one client per event loop: its connections belong to that loop
    llm_env.setenv("LLM_MODEL", "other-model")
    assert get_adapter(load_llm_config(load_settings())) is not first
    assert create_adapter(load_llm_config(load_settings())) is not get_adapter(load_llm_config(load_settings()))


def test_only_the_configured_providers_sdk_is_imported(openai_llm: FakeLLMServer) -> None:
    code = (
        "import sys\n"
        "from agent_app.routes.chat import chat_routes\n"
        "from agent_app.llm_config import load_llm_config\n"
        "from agent_app.providers import get_adapter\n"
        "from agent_app.settings import load_settings\n"
        "get_adapter(load_llm_config(load_settings()))\n"
        "assert 'openai' in sys.modules, 'openai SDK not loaded'\n"
        "assert 'google.genai' not in sys.modules, 'google-genai loaded for an openai-compatible config'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
