"""A provider's JSON may carry a lone surrogate escape (``"\\ud800"``), which Python reads into a ``str`` that UTF-8
cannot encode: the answer could then be neither stored nor sent on. Through the real SDKs and the fake server,
every text, tool name and argument of an answer must reach the chat with U+FFFD in its place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_app.chat_handler import ChatHandler
from agent_app.llm_config import load_llm_config
from agent_app.orchestrator import Orchestrator
from agent_app.orchestrator_options import OrchestratorOptions
from agent_app.providers import get_adapter
from agent_app.providers.provider_text import valid_data, valid_text
from agent_app.registry import ToolRegistry
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ExecutionState, ToolCall
from fake_llm import FakeLLMServer, openai_text, openai_tool_calls, raw_reply, tool_call
from tests.chat_support import post_chat, stream_answer

LONE = "\ud800"
BAD_TEXT = f"bad {LONE} text"
CLEAN_TEXT = "bad \ufffd text"


def gemini_sse(*parts: dict[str, Any]) -> bytes:
    """A one-event ``streamGenerateContent`` body, its JSON written with ASCII escapes as some servers do."""
    body = {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}]}
    return b"data: " + json.dumps(body, ensure_ascii=True).encode() + b"\n\n"


def lone_surrogate_text_reply(provider: str) -> Any:
    if provider == "gemini":
        return raw_reply(gemini_sse({"text": BAD_TEXT}), content_type="text/event-stream")
    return openai_text(BAD_TEXT)


@pytest.fixture(params=["openai-compatible", "gemini"])
def any_llm(request: pytest.FixtureRequest) -> tuple[str, FakeLLMServer]:
    fixture = "openai_llm" if request.param == "openai-compatible" else "gemini_llm"
    return request.param, request.getfixturevalue(fixture)


class TextListener:
    """Keeps the text the run streamed to the page."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None: ...

    def on_message(self, message: ChatMessage) -> None: ...

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None: ...

    def on_text(self, delta: str) -> None:
        self.texts.append(delta)


def push(server: FakeLLMServer, reply: Any) -> None:
    server.chat.push(reply)
    server.gemini.push(reply)


def test_a_lone_surrogate_in_an_answer_reaches_the_chat_as_a_replacement_character(
    any_llm: tuple[str, FakeLLMServer],
) -> None:
    provider, server = any_llm
    push(server, lone_surrogate_text_reply(provider))
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    question = chat.add_message(ChatMessage(role="user", content="What is said?"))
    listener = TextListener()
    registry = ToolRegistry()
    options = OrchestratorOptions(listener=listener)
    Orchestrator(ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent, options).run(
        [question]
    )
    streamed = listener.texts
    assert (agent.status, chat.error) == ("idle", None)
    answer = chat.messages[-1]
    assert answer.content == CLEAN_TEXT and "".join(streamed) == CLEAN_TEXT
    assert ChatMessage.model_validate_json(answer.model_dump_json()) == answer  # storable, as it is


def test_the_route_answers_a_lone_surrogate_as_a_replacement_character(any_llm: tuple[str, FakeLLMServer]) -> None:
    provider, server = any_llm
    push(server, lone_surrogate_text_reply(provider))
    result = post_chat(b'{"messages": [{"role": "user", "content": "Hi"}]}')
    assert result.status == 200 and result.body["content"] == CLEAN_TEXT
    json.dumps(result.body, ensure_ascii=False).encode()  # what the route's JSON response does


def test_lone_surrogates_in_a_tool_call_of_openai_are_replaced(openai_llm: FakeLLMServer) -> None:
    arguments = '{"assetId": "a\\ud800", "k\\udc00": ["\\ud83c"]}'
    openai_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", arguments)))
    [call] = (
        stream_answer(
            get_adapter(load_llm_config(load_settings())), [ChatMessage(role="user", content="Hi")]
        ).tool_calls
        or []
    )
    assert call.args == {"assetId": "a\ufffd", "k\ufffd": ["\ufffd"]}


def test_lone_surrogates_in_a_function_call_of_gemini_are_replaced(gemini_llm: FakeLLMServer) -> None:
    call = {"functionCall": {"name": "transcribe_video", "args": {"assetId": f"a{LONE}"}}, "thoughtSignature": "c2ln"}
    gemini_llm.gemini.push(raw_reply(gemini_sse({"text": BAD_TEXT}, call), content_type="text/event-stream"))
    answer = stream_answer(get_adapter(load_llm_config(load_settings())), [ChatMessage(role="user", content="Hi")])
    assert answer.content == CLEAN_TEXT
    [made] = answer.tool_calls or []
    assert made.args == {"assetId": "a\ufffd"}
    json.dumps(answer.provider_metadata, ensure_ascii=False).encode()  # the turn kept for replay is storable


def test_valid_text_keeps_what_needs_no_change() -> None:
    text, emoji = "plain ascii", "héllo 🎬"
    assert valid_text(text) is text and valid_text(emoji) is emoji
    data = {"a": [1, "x", {"b": None}], "é": 2.5}
    assert valid_data(data) is data
    assert valid_data({"a": LONE, LONE: 1, "c": [LONE]}) == {"a": "\ufffd", "\ufffd": 1, "c": ["\ufffd"]}
