"""``POST /api/agent/chat`` with ``Accept: text/event-stream``, parsed by a real SSE client (httpx-sse), and
the route's limit: a full route answers 503 with ``Retry-After`` at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from httpx_sse import EventSource
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agent_app.routes.chat import chat_routes
from agent_app.routes.chat_events import wants_event_stream
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    delayed,
    error_reply,
    gemini_call,
    gemini_function_calls,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
)
from fake_llm.streams import StreamScript

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
SSE = {"Accept": "text/event-stream"}


@pytest.fixture
def http(llm_env: pytest.MonkeyPatch) -> Iterator[TestClient]:
    app = Starlette(routes=chat_routes())
    with TestClient(app, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 50000)) as client:
        yield client


def _events(http: TestClient, body: Any = HELLO) -> tuple[Any, list[tuple[str, Any]]]:
    """The response and its events as httpx-sse parses them (none when the answer is not a stream)."""
    with http.stream("POST", "/api/agent/chat", json=body, headers=SSE) as response:
        if response.headers["content-type"].startswith("text/event-stream"):
            source = EventSource(cast(httpx.Response, response))  # the test client's response has httpx's API
            return response, [(sse.event, sse.json()) for sse in source.iter_sse()]
        response.read()
        return response, []


def test_sse_route_sends_text_pieces_tool_calls_usage_then_the_whole_answer(
    openai_llm: FakeLLMServer, http: TestClient
) -> None:
    reply = openai_tool_calls(tool_call("transcribe_video", {"assetId": "a1"}, id="call_1"), content="Looking now.")
    openai_llm.chat.push(reply, streamed(reply, StreamScript(pieces=3)))
    plain = http.post("/api/agent/chat", json=HELLO)
    response, events = _events(http)
    assert response.status_code == 200 and response.headers["cache-control"] == "no-cache"
    assert events == [
        ("text", {"delta": "Look"}),
        ("text", {"delta": "ing "}),
        ("text", {"delta": "now."}),
        ("toolCall", {"id": "call_1", "name": "transcribe_video", "args": {"assetId": "a1"}}),
        ("usage", {"inputTokens": 10, "outputTokens": 5}),
        ("done", plain.json()),
    ]
    assert plain.headers["content-type"] == "application/json"


def test_sse_route_on_gemini_carries_the_turn_to_replay(gemini_llm: FakeLLMServer, http: TestClient) -> None:
    gemini_llm.gemini.push(gemini_function_calls(gemini_call("echo_context", {}, id="g1", thought_signature=b"s")))
    _, events = _events(http)
    assert [name for name, _ in events] == ["toolCall", "usage", "done"]
    done = events[-1][1]
    assert done["toolCalls"][0]["id"] == "g1" and done["providerMetadata"]["gemini"]["content"]["parts"]


@pytest.mark.parametrize(
    ("body", "reply", "status"),
    [
        ({"messages": []}, None, 400),
        (HELLO, error_reply(401, "bad key"), 502),
        (HELLO, error_reply(429, retry_after_ms=1), 502),
        (HELLO, error_reply(500), 502),
    ],
)
def test_a_failure_before_any_text_keeps_todays_status_and_json(
    openai_llm: FakeLLMServer, http: TestClient, body: Any, reply: Any, status: int
) -> None:
    if reply is not None:
        openai_llm.chat.push(reply)
    response, events = _events(http, body)
    assert (response.status_code, events) == (status, [])
    assert response.headers["content-type"] == "application/json" and "error" in response.json()


def test_a_failure_after_text_ends_the_stream_with_an_error_event(openai_llm: FakeLLMServer, http: TestClient) -> None:
    openai_llm.chat.push(streamed(openai_text("Hello there"), StreamScript(pieces=2, fault="cut", fault_after=2)))
    response, events = _events(http)
    assert response.status_code == 200
    assert events == [
        ("text", {"delta": "Hello "}),
        ("error", {"error": "LLM provider error", "kind": "provider_failed"}),
    ]


def test_a_full_route_answers_503_with_retry_after_at_once(
    openai_llm: FakeLLMServer, http: TestClient, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.setenv("AGENT_MAX_CONCURRENT_CHATS", "2")
    openai_llm.chat.default = delayed(openai_text("late"), 1.0)
    answers: list[int] = []
    waiting = [threading.Thread(target=lambda: answers.append(http.post("/api/agent/chat", json=HELLO).status_code))]
    waiting.append(threading.Thread(target=lambda: answers.append(_events(http)[0].status_code)))
    for thread in waiting:
        thread.start()
    while len(openai_llm.chat.requests) < 2:
        threading.Event().wait(0.01)
    refused = http.post("/api/agent/chat", json=HELLO, headers=SSE)
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "busy" in refused.json()["error"]
    for thread in waiting:
        thread.join(10)
    assert answers == [200, 200]
    openai_llm.chat.default = openai_text("at once")
    assert http.post("/api/agent/chat", json=HELLO).status_code == 200  # both slots were given back


@pytest.mark.parametrize(
    ("accept", "streams"),
    [
        ("text/event-stream", True),
        ("Text/Event-Stream; charset=utf-8", True),
        ("application/json, text/event-stream", True),
        ("text/event-stream;q=0", False),
        ("text/event-stream; q=0.0, application/json", False),
        ("application/json, text/event-stream;q=0.5", False),
        ("text/event-stream;q=0.5, */*;q=0.9", False),
        ("text/event-stream;q=0.9, application/*;q=0.5", True),
        ("text/event-stream;q=bad", False),
        ("*/*", False),
        ("", False),
    ],
)
def test_the_event_stream_is_chosen_by_the_accept_headers_q_values(accept: str, streams: bool) -> None:
    assert wants_event_stream({"accept": accept}) is streams


def test_an_event_stream_refused_by_q_values_is_answered_as_json(openai_llm: FakeLLMServer, http: TestClient) -> None:
    openai_llm.chat.default = openai_text("Plain JSON")
    for accept in ("text/event-stream;q=0", "application/json, text/event-stream;q=0.2"):
        response = http.post("/api/agent/chat", json=HELLO, headers={"Accept": accept})
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
        assert response.json()["content"] == "Plain JSON"
    response = http.post("/api/agent/chat", json=HELLO, headers={"Accept": "text/event-stream;q=0.8"})
    assert response.headers["content-type"].startswith("text/event-stream")


def test_an_answer_quoting_the_key_is_redacted_in_json_and_in_events_split_across_deltas(
    openai_llm: FakeLLMServer, http: TestClient
) -> None:
    quoting = openai_text(f"Your key is {CANARY_API_KEY}, and again {CANARY_API_KEY}.")
    openai_llm.chat.push(quoting, streamed(quoting, StreamScript(pieces=23)))
    plain = http.post("/api/agent/chat", json=HELLO)
    assert plain.status_code == 200
    assert plain.json()["content"] == "Your key is [redacted], and again [redacted]."
    response, events = _events(http)
    deltas = [data["delta"] for name, data in events if name == "text"]
    assert len(deltas) > 2 and all(CANARY_API_KEY[:6] not in delta for delta in deltas)
    assert "".join(deltas) == "Your key is [redacted], and again [redacted]."
    assert events[-1] == ("done", {"content": "Your key is [redacted], and again [redacted]."} | events[-1][1])
    assert response.status_code == 200 and CANARY_API_KEY not in repr(events)
