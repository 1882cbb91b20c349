"""What the server receives from the openai-compatible adapter (the SDK's typed call) for every message shape
we build: the system prompt, converted tool schemas, replayed calls (odd ids aliased, unreadable arguments as
the model wrote them), tool results."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolCall, ToolResult, ToolSchema
from fake_llm import FakeLLMServer, error_reply, openai_text
from tests.chat_support import stream_answer
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


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "transcribe_video", "arguments": arguments}}


ALIAS = "call_" + hashlib.sha256(("vllm-" + "x" * 60).encode()).hexdigest()[:32]
"""A stable alias of an id OpenAI would refuse (over 40 characters): a call and its result keep the same one."""
SENT_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is said? 🎬"},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [_call("call_1", '{"assetId":"a1","nested":{"n":[1,2.5,null]}}'), _call(ALIAS, "{}")],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"result":{}}'},
    {"role": "tool", "tool_call_id": ALIAS, "content": '{"error":"no"}'},
    {"role": "assistant", "tool_calls": [_call("call_3", "{assetId: a1")]},
    {"role": "tool", "tool_call_id": "call_3", "content": '{"error":"bad"}'},
    {"role": "assistant", "content": "It says hi."},
    {"role": "user", "content": "Thanks"},
]
SENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "transcribe_video",
            "description": "Transcribe a video",
            "parameters": {
                "type": "object",
                "properties": {
                    "assetId": {"type": "string", "description": "Which asset"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "startMs": {"type": "integer"},
                },
                "required": ["assetId"],
            },
        },
    }
]


@pytest.mark.parametrize("tools", [TOOLS, []], ids=["with-tools", "without-tools"])
def test_every_message_shape_reaches_the_server_as_the_chat_api_reads_it(
    openai_llm: FakeLLMServer, tools: list[ToolSchema]
) -> None:
    assert (
        stream_answer(
            get_adapter(load_llm_config(load_settings())), every_shape(), system_prompt=SYSTEM, tool_schemas=tools
        ).content
        == "fake reply"
    )
    sent = openai_llm.chat.last.json
    assert sent["messages"] == SENT_MESSAGES
    assert sent.get("tools") == (SENT_TOOLS if tools else None)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_a_retried_request_resends_the_whole_history(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "2")
    openai_llm.chat.push(error_reply(429, retry_after_ms=1), error_reply(503, retry_after_ms=1), openai_text("ok"))
    history = every_shape()
    assert (
        stream_answer(
            get_adapter(load_llm_config(load_settings())), history, system_prompt=SYSTEM, tool_schemas=TOOLS
        ).content
        == "ok"
    )
    first, *retries = openai_llm.chat.requests
    assert len(retries) == 2 and all(retry.body == first.body for retry in retries)
    assert first.json["messages"][-1] == {"role": "user", "content": "Thanks"}
