"""The openai-compatible adapter sends its history past the SDK's request transform (in ``extra_body``): the
bytes on the wire must be the ones the SDK's own typed call sends, for every message shape we build."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.providers.openai_request import messages_to_openai, tool_schema_to_openai
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolCall, ToolResult, ToolSchema
from fake_llm import CANARY_API_KEY, FakeLLMServer, error_reply, openai_text
from tests.request_body_support import SYSTEM, TOOLS


def every_shape() -> list[ChatMessage]:
    """A history holding each message shape the adapter builds."""
    good = ToolCall(id="call_1", name="transcribe_video", args={"assetId": "a1", "nested": {"n": [1, 2.5, None]}})
    odd_id = ToolCall(id="vllm-" + "x" * 60, name="transcribe_video", args={})  # sent as a stable alias
    unreadable = ToolCall(id="call_3", name="transcribe_video", args={}, arguments_error="not JSON")
    return [
        ChatMessage(role="user", content="What is said? 🎬"),
        ChatMessage(role="assistant", content="Let me look.", tool_calls=[good, odd_id]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="call_1", name="transcribe_video", result={})),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=odd_id.id, name="transcribe_video", error="no")),
        ChatMessage(
            role="assistant",
            tool_calls=[unreadable],
            provider_metadata={"openai-compatible": {"rawArguments": {"call_3": "{assetId: a1"}}},
        ),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="call_3", name="transcribe_video", error="bad")),
        ChatMessage(role="assistant", content="It says hi."),
        ChatMessage(role="user", content="Thanks"),
    ]


def typed_call_body(server: FakeLLMServer, history: list[ChatMessage], tools: list[ToolSchema]) -> bytes:
    """The body the SDK sends for the same request made the documented way (typed, transformed)."""
    client = openai.OpenAI(api_key=CANARY_API_KEY, base_url=server.openai_base_url, max_retries=0)
    wire_tools: Any = [tool_schema_to_openai(schema) for schema in tools] or openai.omit
    with client:
        client.chat.completions.create(
            model="fake-model",
            messages=messages_to_openai(SYSTEM, history),
            tools=wire_tools,
            stream=True,
            stream_options={"include_usage": True},
        ).close()
    return server.chat.last.body


@pytest.mark.parametrize("tools", [TOOLS, []], ids=["with-tools", "without-tools"])
def test_the_history_sent_past_the_sdk_transform_is_the_typed_calls_body_byte_for_byte(
    openai_llm: FakeLLMServer, tools: list[ToolSchema]
) -> None:
    history = every_shape()
    assert (
        get_adapter(load_llm_config(load_settings())).chat(history, system_prompt=SYSTEM, tool_schemas=tools).content
        == "fake reply"
    )
    ours = openai_llm.chat.last.body
    assert ours == typed_call_body(openai_llm, history, tools)
    sent = openai_llm.chat.last.json
    assert len(sent["messages"]) == len(history) + 1 and ("tools" in sent) == bool(tools)


def test_a_retried_request_resends_the_whole_history(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "2")
    openai_llm.chat.push(error_reply(429, retry_after_ms=1), error_reply(503, retry_after_ms=1), openai_text("ok"))
    history = every_shape()
    assert (
        get_adapter(load_llm_config(load_settings())).chat(history, system_prompt=SYSTEM, tool_schemas=TOOLS).content
        == "ok"
    )
    first, *retries = openai_llm.chat.requests
    assert len(retries) == 2 and all(retry.body == first.body for retry in retries)
    assert first.json["messages"][-1] == {"role": "user", "content": "Thanks"}
