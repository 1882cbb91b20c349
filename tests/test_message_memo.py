"""Per-message memos: a run's requests resend the same message objects, so each is estimated and converted once,
and a message that changes (a stubbed copy) or goes away never leaves a stale value behind."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from pydantic import ValidationError

from agent_app.chat_clients import InProcessChatClient
from agent_app.context_budget import message_tokens
from agent_app.message_memo import MessageMemo
from agent_app.orchestrator import Orchestrator
from agent_app.registry import ToolRegistry
from agent_app.settings import load_settings
from agent_app.stores import AgentStore, ChatStore
from agent_app.types import ChatMessage, ToolParameter, ToolResult
from fake_llm import FakeLLMServer, openai_text, openai_tool_calls, tool_call
from tests.tool_support import make_tool


def counting_memo() -> tuple[MessageMemo[int], list[str]]:
    computed: list[str] = []

    def compute(message: ChatMessage) -> int:
        computed.append(message.content)
        return len(message.content)

    return MessageMemo(compute), computed


def test_a_message_is_worked_out_once_however_often_it_is_asked_for() -> None:
    memo, computed = counting_memo()
    first, second = ChatMessage(role="user", content="abc"), ChatMessage(role="user", content="abcdef")
    assert [memo(first), memo(second), memo(first), memo(second)] == [3, 6, 3, 6]
    assert computed == ["abc", "abcdef"]


def test_a_changed_copy_gets_its_own_value_and_the_original_cannot_change_in_place() -> None:
    memo, _ = counting_memo()
    message = ChatMessage(role="user", content="abc")
    assert memo(message) == 3
    assert memo(message.model_copy(update={"content": "a longer text"})) == len("a longer text")
    with pytest.raises(ValidationError, match="frozen"):
        message.content = "changed"  # type: ignore[misc]
    result = ToolResult(tool_call_id="c1", name="t", result={"a": 1})
    with pytest.raises(ValidationError, match="frozen"):
        result.result = {"b": 2}  # type: ignore[misc]


def test_an_entry_goes_with_its_message_so_the_memo_holds_nothing_alive() -> None:
    memo, computed = counting_memo()
    kept = ChatMessage(role="user", content="kept")
    memo(kept)
    for index in range(1000):
        memo(ChatMessage(role="user", content=f"gone {index}"))
    gc.collect()
    assert len(memo) == 1
    memo(kept)
    assert computed.count("kept") == 1


def test_token_estimates_are_kept_per_message_and_a_stub_is_estimated_anew() -> None:
    big = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="t", result={"text": "word " * 2000}))
    estimate = message_tokens(big)
    assert message_tokens(big) == estimate > 2000
    stub = big.model_copy(update={"tool_result": ToolResult(tool_call_id="c1", name="t", result="[left out]")})
    assert message_tokens(stub) < 50


def test_a_run_sends_its_history_unchanged_on_every_request(openai_llm: FakeLLMServer) -> None:
    """The converted messages are reused by the next request: the SDK must only read them."""

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
    Orchestrator(InProcessChatClient(registry, load_settings()), registry, chat, agent).run()
    assert chat.messages[-1].content == "done"
    sent = [request.json["messages"] for request in openai_llm.chat.requests]
    assert len(sent) == 3
    assert sent[1][: len(sent[0])] == sent[0] and sent[2][: len(sent[1])] == sent[1]
    assert sent[2][-1] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": '{"result":{"step":2,"text":"' + "said " * 50 + '"}}',
    }
