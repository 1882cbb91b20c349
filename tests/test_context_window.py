"""Long conversations never break the chat (issue 11), on both providers, through the real stack: the
orchestrator, the in-process client, the chat handler, the adapters and the official SDKs against the fake
LLM server enforcing a context limit the way the real APIs do, with the conversation in real SQLite storage.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_app.chat_handler import ChatHandler
from agent_app.errors import ErrorKind
from agent_app.orchestrator import Orchestrator
from agent_app.registry import ToolRegistry
from agent_app.request_validation import conversation_problems
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import load_settings
from agent_app.storage import SqliteStorage
from agent_app.tool_args import ToolArgs
from agent_app.types import ChatMessage, ChatRequest, ContextReport, ToolDefinition, ToolEnvironment, ToolParameter
from agent_app.ui.context_status import CUT_MARKER
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
from tests.history_html import classed_texts
from tests.long_conversations import ASSET, CONTEXT, PAGE_MS, long_conversation, transcript_page
from tests.page_support import bubbles, configure_env, history_elements, new_page, send
from tests.tool_support import make_tool

LIMIT = 16_000
QUESTION = "What do they say between 55:00 and 60:00?"


@pytest.fixture(params=["openai", "gemini"])
def llm(request: pytest.FixtureRequest) -> FakeLLMServer:
    """The app configured for each provider in turn, with a 16k-token window on both sides."""
    server: FakeLLMServer = request.getfixturevalue(f"{request.param}_llm")
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("llm_env")
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", str(LIMIT))
    server.chat.context_limit = server.gemini.context_limit = LIMIT
    return server


def transcript_tool() -> ToolDefinition[ToolArgs]:
    """``transcribe_video`` answering from its cache: the real result shape, without decoding speech."""

    def execute(args: dict[str, Any], env: ToolEnvironment) -> dict[str, Any]:
        return transcript_page(int(args.get("startMs", 0)) // PAGE_MS)

    asset = ToolParameter(key="assetId", type="string")
    return make_tool(
        "transcribe_video", execute, asset, *(ToolParameter(key=key, type="number") for key in ("startMs", "endMs"))
    )


def stored_conversation(data_dir: Path, messages: list[ChatMessage]) -> tuple[ChatStore, AgentStore, Any, str]:
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Harbour film")
    conversation = storage.create_conversation(project.id)
    state: dict[str, Any] = {}
    chat = ChatStore(state, persistence=storage.chat_persistence(conversation.id))
    for message in messages:
        chat.add_message(message)
    agent = AgentStore(state)
    agent.set_context(CONTEXT)
    return chat, agent, storage, conversation.id


def script_tool_loop(server: FakeLLMServer) -> None:
    """The model reads page 11 (55:00-60:00), then answers."""
    args = {"assetId": ASSET.id, "startMs": 11 * PAGE_MS, "endMs": 12 * PAGE_MS}
    server.chat.push(openai_tool_calls(tool_call("transcribe_video", args)), openai_text("They plan the harbour."))
    server.gemini.push(
        gemini_function_calls(gemini_call("transcribe_video", args, thought_signature=b"new-sig")),
        gemini_text("They plan the harbour."),
    )


def run(chat: ChatStore, agent: AgentStore) -> None:
    registry = ToolRegistry()
    registry.register_tool(transcript_tool())
    Orchestrator(ChatHandler(load_settings(), registry.to_tool_schemas()), registry, chat, agent).run()


def sent_requests(server: FakeLLMServer) -> list[Any]:
    return [request for request in server.requests if request.endpoint in ("chat", "gemini")]


def assert_valid(server: FakeLLMServer, body: dict[str, Any]) -> None:
    """Every call with its result, every result with its call, the question present, signatures kept."""
    if "messages" in body:
        messages = body["messages"]
        assert any(m["role"] == "user" and m["content"] == QUESTION for m in messages)
        open_calls: set[str] = set()
        for message in messages:
            if message["role"] == "tool":
                open_calls.remove(message["tool_call_id"])
            else:
                assert not open_calls, f"calls without results: {open_calls}"
                open_calls = {call["id"] for call in message.get("tool_calls") or []}
        assert not open_calls
        return
    parts = [(content["role"], part) for content in body["contents"] for part in content["parts"]]
    assert any(part.get("text") == QUESTION for _, part in parts)
    calls = [part for role, part in parts if "functionCall" in part]
    responses = [part for _, part in parts if "functionResponse" in part]
    assert len(calls) == len(responses)
    assert all(base64.b64decode(part["thoughtSignature"]).startswith((b"signature-", b"new-sig")) for part in calls)
    assert body["contents"][0]["role"] == "user"


def test_a_thousand_message_conversation_with_ten_transcript_pages_completes_a_new_tool_loop_under_16k(
    llm: FakeLLMServer, tmp_path: Path
) -> None:
    history = long_conversation(1_000, 10)
    chat, agent, storage, conversation_id = stored_conversation(tmp_path, history)
    chat.add_message(ChatMessage(role="user", content=QUESTION))
    script_tool_loop(llm)

    run(chat, agent)

    assert chat.error is None, chat.error
    requests = sent_requests(llm)
    assert len(requests) == 2  # the call, then the answer: neither was refused for its size
    for request in requests:
        assert request.input_tokens is not None and request.input_tokens <= LIMIT
        assert_valid(llm, request.json)
    stored = storage.load_messages(conversation_id)
    assert [m.role for m in stored[-4:]] == ["user", "assistant", "tool", "assistant"]
    assert stored[:1000] == history  # nothing deleted or changed in storage: only what is sent shrank
    assert conversation_problems(stored) == []
    report = stored[-1].context
    assert report is not None and report.window_tokens == LIMIT and report.left_out_messages > 300
    assert report.estimated_tokens <= report.budget_tokens
    first_sent = next(m for m in stored if m.id == report.first_sent_id)
    assert first_sent.role == "user"
    # The provider's count came back as usage, kept beside the estimate: the second request of the loop was
    # fitted with the estimate corrected by the first one's count (the fake counts fewer tokens than 3 bytes).
    calling, answered = stored[-3], stored[-1]
    assert calling.usage is not None and calling.usage.input_tokens == requests[0].input_tokens
    assert calling.context is not None and calling.context.scale == 1.0
    assert answered.usage is not None and answered.usage.input_tokens == requests[1].input_tokens
    assert 0.5 <= report.scale < 1.0


def test_a_server_whose_window_is_smaller_than_configured_is_answered_by_shrinking_and_retrying_once(
    llm: FakeLLMServer, tmp_path: Path
) -> None:
    llm.chat.context_limit = llm.gemini.context_limit = 6_000  # the server was started with a smaller window
    chat, agent, storage, conversation_id = stored_conversation(tmp_path, long_conversation(300, 4))
    chat.add_message(ChatMessage(role="user", content=QUESTION))
    llm.chat.push(openai_text("Here is what they say."))
    llm.gemini.push(gemini_text("Here is what they say."))

    run(chat, agent)

    assert chat.error is None, chat.error
    assert chat.messages[-1].content == "Here is what they say."
    refused, accepted = sent_requests(llm)
    assert refused.input_tokens is not None and refused.input_tokens > 6_000
    assert accepted.input_tokens is not None and accepted.input_tokens <= 6_000
    assert_valid(llm, accepted.json)
    assert len(storage.load_messages(conversation_id)) == 302


def test_a_single_message_larger_than_the_window_gets_a_clear_error_before_sending(
    llm: FakeLLMServer, tmp_path: Path
) -> None:
    chat, agent, storage, conversation_id = stored_conversation(tmp_path, long_conversation(20, 1))
    chat.add_message(ChatMessage(role="user", content="Please proofread: " + "lorem ipsum dolor " * 5_000))

    run(chat, agent)

    assert chat.error is not None and chat.error.startswith("This message is too long for the model's context window")
    assert "16,000 tokens" in chat.error and chat.error_kind is ErrorKind.TOO_LARGE_FOR_MODEL
    assert sent_requests(llm) == []  # refused before sending, never a provider 400
    assert len(storage.load_messages(conversation_id)) == 21  # the message is kept for the user to shorten


# --- the page -------------------------------------------------------------------------------------------


def test_the_page_marks_the_cut_shows_how_full_the_context_is_and_still_shows_the_whole_conversation(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    configure_env(monkeypatch, data_dir, fake_llm)
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", str(LIMIT))
    fake_llm.chat.context_limit = LIMIT
    fake_llm.chat.push(openai_text("They plan the harbour."))
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Harbour film")
    conversation = storage.create_conversation(project.id)
    history = long_conversation(600, 6)
    for message in history:
        storage.append_message(conversation.id, message)
    storage.close()

    at = send(new_page({"project": project.id, "chat": conversation.id}), QUESTION)
    at.session_state["chat.window"] = 10_000  # "Show older" pressed until nothing is hidden
    at.run()

    assert not at.exception, [e.value for e in at.exception]
    drawn = [str(bubble["html"]) for bubble in history_elements(at)]
    assert [line for html in drawn for line in classed_texts(html, "cut")] == [f"✂ {CUT_MARKER}"]
    status = next(line for html in drawn for line in classed_texts(html, "quiet") if "Context " in line)
    assert re.search(r"Context \d+% full \(about [\d,]+ of 14,000 tokens\) · \d+ earlier messages not sent", status)
    shown = bubbles(at)
    assert [text for role, text in shown if role == "user"] == [m.content for m in history if m.role == "user"] + [
        QUESTION
    ]
    assert shown[-1] == ("assistant", "They plan the harbour.")
    # The marker sits right above the oldest message still sent.
    report = chat_report(data_dir, conversation.id)
    first_sent = next(m for m in history if m.id == report.first_sent_id)
    order = in_page_order(at)
    marker = order.index(f"cut:{CUT_MARKER}")
    assert order[marker + 1] == f"user:{first_sent.content}"


def in_page_order(at: Any) -> list[str]:
    """The cut marker (``cut:`` its text, the scissors removed) and chat bubbles (``role:first text``) in the order
    the page draws them."""
    found: list[str] = []
    for bubble in history_elements(at):
        html = str(bubble["html"])
        if classed_texts(html, "cut"):
            found.append(f"cut:{classed_texts(html, 'cut')[0].removeprefix('✂ ')}")
        elif 'data-role="' in html:
            role = html.split('data-role="', 1)[1].split('"', 1)[0]
            found.append(f"{role}:{next(iter(classed_texts(html, 'text')), '').strip()}")
    return found


def chat_report(data_dir: Path, conversation_id: str) -> ContextReport:
    storage = SqliteStorage(data_dir)
    try:
        report = storage.load_messages(conversation_id)[-1].context
    finally:
        storage.close()
    assert report is not None
    return report


# --- the HTTP route: its callers send whole histories too -------------------------------------------------


def route_body(messages: list[ChatMessage]) -> bytes:
    request = ChatRequest(messages=messages, context=CONTEXT)
    return json.dumps(request.to_wire()).encode()


def test_the_route_fits_a_whole_history_with_the_same_policy(llm: FakeLLMServer) -> None:
    llm.chat.push(openai_text("ok"))
    llm.gemini.push(gemini_text("ok"))
    history = [*long_conversation(1_000, 10), ChatMessage(role="user", content=QUESTION)]
    result = post_chat(route_body(history))
    assert result.status == 200, result.body
    (request,) = sent_requests(llm)
    assert request.input_tokens is not None and request.input_tokens <= LIMIT
    assert_valid(llm, request.json)
    report = result.body["context"]
    assert report["leftOutMessages"] > 500 and report["firstSentId"] in {m.id for m in history}


def test_the_route_refuses_a_single_message_larger_than_the_window_with_a_400_naming_it(llm: FakeLLMServer) -> None:
    result = post_chat(route_body([ChatMessage(role="user", content="word " * 40_000)]))
    assert result.status == 400
    assert result.body["error"].startswith("This message is too long for the model's context window (16,000 tokens")
    assert sent_requests(llm) == []
