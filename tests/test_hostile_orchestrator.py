"""The orchestrator against hostile tools and models, end to end: the real route, adapter and SDK over the
fake LLM server. Tools returning data that is not JSON, models asking for 50 calls at once or calling the
same tool forever, servers reusing tool-call ids across turns."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_app.chat_handler import ChatHandler
from agent_app.orchestrator import ITERATION_LIMIT_MESSAGE, Orchestrator
from agent_app.orchestrator_options import MAX_CALLS_PER_ROUND, OrchestratorOptions
from agent_app.providers.provider_loop import TextSink
from agent_app.registry import ToolRegistry
from agent_app.request_validation import conversation_problems
from agent_app.runs.recovery import close_unfinished_calls
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ToolCall,
    ToolEnvironment,
    ToolParameter,
    ToolResult,
)
from fake_llm import (
    FakeLLMServer,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    openai_text,
    openai_tool_calls,
    tool_call,
)
from tests.chat_support import post_chat
from tests.tool_support import make_tool


class Color(enum.Enum):
    RED = "red"


COUNTER = ToolParameter(key="n", type="integer", description="which call")
"""The one argument the test tools declare (some calls number themselves with it)."""


def _run(
    tools: dict[str, Callable[[dict[str, Any], ToolEnvironment], Any]], **kwargs: Any
) -> tuple[list[ChatMessage], ChatStore]:
    registry = ToolRegistry()
    for name, execute in tools.items():
        registry.register_tool(make_tool(name, execute, COUNTER))
    state: dict[str, Any] = {}
    chat, agent = ChatStore(state), AgentStore(state)
    chat.add_message({"role": "user", "content": "Go"})
    Orchestrator(
        ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent, OrchestratorOptions(**kwargs)
    ).run()
    assert agent.status in ("idle", "error")
    return chat.messages, chat


def _results(messages: list[ChatMessage]) -> list[ToolResult]:
    return [m.tool_result for m in messages if m.tool_result is not None]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2026-01-02T03:04:05Z"),
        (decimal.Decimal("1.50"), "1.50"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (Path("/media/a.mp4"), "/media/a.mp4"),
        (Color.RED, "red"),
        ({1, 2}, [1, 2]),
        (b"plain bytes", "plain bytes"),
    ],
    ids=["datetime", "decimal", "uuid", "path", "enum", "set", "bytes"],
)
def test_results_that_json_cannot_hold_directly_are_converted(
    openai_llm: FakeLLMServer, value: object, expected: object
) -> None:
    openai_llm.chat.push(openai_tool_calls(tool_call("odd", {}, id="c1")), openai_text("done"))
    messages, _ = _run({"odd": lambda args, env: {"value": value}})
    [result] = _results(messages)
    assert result.error is None and result.result == {"value": expected}
    sent = json.loads(openai_llm.chat.last.json["messages"][-1]["content"])
    assert sent == {"result": {"value": expected}}


@pytest.mark.parametrize(
    "value",
    [b"\xff\xfe\x00binary", float("nan"), float("inf"), object(), (lambda: None)],
    ids=["binary-bytes", "nan", "infinity", "object", "function"],
)
def test_results_that_cannot_be_sent_are_tool_errors_and_the_loop_goes_on(
    openai_llm: FakeLLMServer, value: object
) -> None:
    openai_llm.chat.push(openai_tool_calls(tool_call("odd", {}, id="c1")), openai_text("sorry"))
    messages, chat = _run({"odd": lambda args, env: {"value": value}})
    [result] = _results(messages)
    assert result.error is not None and "odd" in result.error
    assert messages[-1].content == "sorry" and chat.error is None
    json.dumps(openai_llm.chat.last.json, allow_nan=False)  # what went to the provider is strict JSON


def test_a_self_referencing_result_is_a_tool_error(openai_llm: FakeLLMServer) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    openai_llm.chat.push(openai_tool_calls(tool_call("odd", {}, id="c1")), openai_text("sorry"))
    messages, _ = _run({"odd": lambda args, env: loop})
    assert _results(messages)[0].error is not None and messages[-1].content == "sorry"


@pytest.mark.parametrize("asked", [50, 1000])
def test_many_calls_in_one_turn_run_at_most_the_cap_and_answer_every_call(
    openai_llm: FakeLLMServer, asked: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "200000")  # room to send every answer back
    ran: list[int] = []
    calls = [tool_call("count", {"n": n}, id=f"c{n}") for n in range(asked)]
    openai_llm.chat.push(openai_tool_calls(*calls), openai_text("done"))

    def count(args: dict[str, Any], env: ToolEnvironment) -> int:
        ran.append(args["n"])
        return int(args["n"])

    messages, _ = _run({"count": count})
    assert ran == list(range(MAX_CALLS_PER_ROUND))
    results = _results(messages)
    assert [r.tool_call_id for r in results] == [f"c{n}" for n in range(asked)]
    skipped = results[MAX_CALLS_PER_ROUND:]
    assert all(r.error is not None and str(MAX_CALLS_PER_ROUND) in r.error for r in skipped)
    assert conversation_problems(messages) == []
    assert len(openai_llm.chat.last.json["messages"]) == 1 + 1 + 1 + asked  # system, user, assistant, results


def test_a_model_calling_the_same_tool_forever_stops_at_the_iteration_cap(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.default = lambda request: openai_tool_calls(tool_call("again", {}, id="call_0"))
    messages, chat = _run({"again": lambda args, env: "ok"})
    assert messages[-1].content == ITERATION_LIMIT_MESSAGE and chat.error is None
    assert len(openai_llm.chat.requests) == 8


def test_ids_reused_across_turns_are_made_unique(openai_llm: FakeLLMServer) -> None:
    """llama.cpp-style servers number calls per response (``call_0`` every turn). The page matches results to
    calls by id across the whole conversation (cards, interrupted-run recovery), so ids must not repeat."""
    openai_llm.chat.push(
        openai_tool_calls(tool_call("echo", {"n": 1}, id="call_0")),
        openai_tool_calls(tool_call("echo", {"n": 2}, id="call_0")),
        openai_text("done"),
    )
    messages, _ = _run({"echo": lambda args, env: args["n"]})
    call_ids = [call.id for m in messages for call in m.tool_calls or []]
    assert call_ids[0] == "call_0" and len(set(call_ids)) == 2
    assert [(r.tool_call_id, r.result) for r in _results(messages)] == list(zip(call_ids, [1, 2], strict=True))
    sent = openai_llm.chat.last.json["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == call_ids
    # An interrupted second turn is still recognised as unanswered:
    cut = [*messages[:3], messages[3]]  # user, call 1, result 1, call 2 (no result)
    state: dict[str, Any] = {}
    chat = ChatStore(state)
    chat.load_messages(cut)
    assert close_unfinished_calls(chat) == 1
    assert conversation_problems(chat.messages) == []


def test_gemini_ids_reused_across_turns_are_made_unique(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(
        gemini_function_calls(gemini_call("echo", {"n": 1}, id="fc_1")),
        gemini_function_calls(gemini_call("echo", {"n": 2}, id="fc_1")),
        gemini_text("done"),
    )
    messages, _ = _run({"echo": lambda args, env: args["n"]})
    call_ids = [call.id for m in messages for call in m.tool_calls or []]
    assert len(set(call_ids)) == 2
    sent = gemini_llm.gemini.last.json["contents"]
    responses = [p["functionResponse"] for c in sent for p in c["parts"] if "functionResponse" in p]
    assert [r.get("id") for r in responses] == ["fc_1", "fc_1"]  # Gemini gets its own ids back


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_a_result_too_deep_for_the_route_is_a_tool_error_not_a_poisoned_conversation(
    openai_llm: FakeLLMServer,
) -> None:
    """The route's JSON parser stops at ~200 levels; a result that deep, once stored, would fail every
    later request of the conversation with a 400."""
    openai_llm.chat.push(openai_tool_calls(tool_call("deep", {}, id="c1")), openai_text("sorry"), openai_text("ok"))
    messages, chat = _run({"deep": lambda args, env: _nested(220)})
    [result] = _results(messages)
    assert result.error is not None and "levels deep" in result.error
    assert messages[-1].content == "sorry" and chat.error is None
    follow_up = ChatRequest(messages=[*messages, ChatMessage(role="user", content="more")])
    assert (
        ChatHandler(load_settings(), build_tool_registry(load_settings().enabled_tools).to_tool_schemas())
        .send(follow_up)
        .content
        == "ok"
    )  # the conversation goes on

    openai_llm.chat.push(openai_tool_calls(tool_call("deep", {}, id="c2")), openai_text("ok"))
    fine, _ = _run({"deep": lambda args, env: _nested(40)})
    assert _results(fine)[0].error is None


def test_model_arguments_too_deep_are_an_arguments_error(openai_llm: FakeLLMServer) -> None:
    deep = json.dumps({"a": _nested(100)})
    huge = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    openai_llm.chat.push(openai_tool_calls(tool_call("deep", deep, id="c1"), tool_call("deep", huge, id="c2")))
    openai_llm.chat.push(openai_text("ok"))
    messages, chat = _run({"deep": lambda args, env: "ran"})
    results = _results(messages)
    assert [r.error is not None and "levels deep" in r.error for r in results] == [True, True]
    assert chat.error is None and messages[-1].content == "ok"


def test_a_history_past_the_network_body_limit_still_works_in_the_page(
    openai_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body limit guards the HTTP route; a long conversation in the page must not die with a 413."""
    monkeypatch.setenv("AGENT_MAX_BODY_BYTES", "5000")
    openai_llm.chat.push(openai_tool_calls(tool_call("big", {}, id="c1")), openai_text("done"))
    messages, chat = _run({"big": lambda args, env: "x" * 20_000})
    assert chat.error is None and messages[-1].content == "done"
    over_http = post_chat(ChatRequest(messages=messages).model_dump_json(by_alias=True).encode())
    assert over_http.status == 413


class _RepeatingClient:
    """A ChatClient of another kind (not our route) whose model reuses ids within and across turns."""

    def __init__(self) -> None:
        self.sent: list[ChatRequest] = []

    def send(
        self, request: ChatRequest, *, on_text: TextSink | None = None, cancellation: object = None
    ) -> ChatResponse:
        self.sent.append(request)
        if len(self.sent) <= 2:
            calls = [ToolCall(id="x", name="echo", args={"n": n}) for n in range(2)]
            return ChatResponse(content="", tool_calls=calls)
        return ChatResponse(content="done")


def test_ids_repeated_by_any_client_are_made_unique_before_storing() -> None:
    registry = ToolRegistry()
    registry.register_tool(make_tool("echo", lambda a, e: a["n"], COUNTER))
    state: dict[str, Any] = {}
    chat = ChatStore(state)
    chat.add_message({"role": "user", "content": "Go"})
    client = _RepeatingClient()
    Orchestrator(client, registry, chat, AgentStore(state)).run()
    ids = [call.id for m in chat.messages for call in m.tool_calls or []]
    assert len(ids) == 4 and len(set(ids)) == 4 and ids[0] == "x"
    assert conversation_problems(chat.messages) == []
    assert all(conversation_problems(request.messages) == [] for request in client.sent)


def test_nan_in_a_models_arguments_reaches_the_next_request_and_storage_as_null(openai_llm: FakeLLMServer) -> None:
    """Python's JSON reader takes ``NaN``; what goes back to the provider and into the store must be JSON."""
    openai_llm.chat.push(openai_tool_calls(tool_call("odd", '{"n": NaN}', id="c1")), openai_text("ok"))
    messages, chat = _run({"odd": lambda args, env: {"n": args["n"]}})
    [result] = _results(messages)
    assert result.error is not None and "n" in result.error  # NaN is not an integer: the tool never ran
    sent = openai_llm.chat.last.json["messages"]
    json.dumps(sent, allow_nan=False)
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == {"n": None}
    [asked] = [message for message in chat.messages if message.tool_calls]
    assert asked.tool_calls is not None and asked.tool_calls[0].args == {"n": None}


@pytest.mark.parametrize(
    "calls",
    [
        [tool_call("count", {"n": n}, id=f"c{n}") for n in range(1000)],  # a thousand calls at once
        [tool_call("count", {"n": 1, "pad": "x" * 5_000_000}, id="c0")],  # 5 MB of arguments
    ],
    ids=["1000-calls", "5-MB-arguments"],
)
def test_a_tool_round_too_large_to_send_back_is_left_out_and_the_model_answers_anew(
    openai_llm: FakeLLMServer, calls: list[dict[str, Any]]
) -> None:
    """The model's own round does not fit the context window (the default, 8,192 tokens): the run does not
    fail blaming the user's two-word question; the round is stored, but the next request leaves it out."""
    openai_llm.chat.push(openai_tool_calls(*calls), openai_text("Let me do less."))
    messages, chat = _run({"count": lambda args, env: int(args["n"])})
    assert chat.error is None and messages[-1].content == "Let me do less."
    assert len(_results(messages)) == len(calls) and conversation_problems(messages) == []
    resent = [(m["role"], m.get("content")) for m in openai_llm.chat.last.json["messages"][1:]]
    assert resent == [("user", "Go")]
    assert messages[-1].context is not None and messages[-1].context.estimated_tokens < 8192
