"""``POST /api/agent/chat``: the shared handler, the Starlette endpoint (over ASGI) and the chat clients.

Real adapters and SDKs against the fake LLM server; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from agent_app.chat_clients import HttpChatClient
from agent_app.chat_handler import ChatHandler
from agent_app.errors import ChatError
from agent_app.prompt import build_system_prompt, format_ms
from agent_app.routes.access import authorize, is_loopback
from agent_app.routes.chat import ROUTE_PATH, chat_endpoint, chat_routes
from agent_app.settings import load_settings
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import AgentContext, ChatRequest, MediaAsset, ToolParameter, ToolSchema
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    error_reply,
    gemini_call,
    gemini_function_calls,
    openai_faults,
    openai_text,
    openai_tool_calls,
    tool_call,
)
from tests.chat_support import post_chat

CONTEXT = {
    "projectId": "proj-7",
    "activeSceneId": "scene-2",
    "mediaAssets": [
        {"id": "asset-a1", "name": "interview.mp4", "kind": "video", "durationMs": 95_250},
        {"id": "asset-b2", "name": "voiceover.wav", "kind": "audio"},
    ],
    "playbackTimeMs": 61_500,
    "activeAssetId": "asset-a1",
}


def _body(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _hello(**extra: Any) -> bytes:
    return _body({"messages": [{"role": "user", "content": "Hello"}], **extra})


@pytest.fixture
def http(openai_llm: FakeLLMServer) -> Iterator[TestClient]:
    """The route on a bare Starlette app, called as a loopback client."""
    app = Starlette(routes=chat_routes())
    with TestClient(
        app, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 40000), raise_server_exceptions=False
    ) as client:
        yield client


# --- the spec's scenarios ---------------------------------------------------------------------


def test_valid_request_returns_provider_response(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {"assetId": "asset-a1"}, id="call_9")))
    result = post_chat(_hello(context=CONTEXT))
    assert result.status == 200
    report = result.body.pop("context")  # how the history was fitted into the model's window: all of it sent
    assert report["budgetTokens"] == 7_168 and report["leftOutMessages"] == 0 and "firstSentId" not in report
    assert result.body == {
        "content": "",
        "toolCalls": [{"id": "call_9", "name": "transcribe_video", "args": {"assetId": "asset-a1"}}],
        "usage": {"inputTokens": 10, "outputTokens": 5},
    }
    sent = openai_llm.chat.last.json
    system = sent["messages"][0]
    assert system["role"] == "system" and '"asset-a1"' in system["content"] and "interview.mp4" in system["content"]
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["transcribe_video"]
    assert sent["messages"][1] == {"role": "user", "content": "Hello"}

    openai_llm.chat.push(openai_text("Hi there"))
    answer = post_chat(_hello()).body
    assert answer.pop("context")["windowTokens"] == 8_192
    assert answer == {"content": "Hi there", "usage": {"inputTokens": 10, "outputTokens": 5}}


def test_invalid_request_returns_400(openai_llm: FakeLLMServer) -> None:
    result = post_chat(b"{}")
    assert result.status == 400
    assert "messages" in result.body["error"]
    assert result.body["details"] == [{"field": "messages", "message": "Field required"}]
    assert openai_llm.requests == []


def test_provider_error_returns_502(openai_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    openai_llm.chat.push(error_reply(401, f"Incorrect API key provided: {CANARY_API_KEY}"))
    with caplog.at_level(logging.DEBUG):
        result = post_chat(_hello())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert "AuthenticationError" in caplog.text and "401" in caplog.text
    assert CANARY_API_KEY not in caplog.text


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        pytest.param(b'{"messages": [', ["body"], id="malformed-json"),
        pytest.param(b"\xff\xfe", ["body"], id="not-utf8"),
        pytest.param(b"[]", ["body"], id="not-an-object"),
        pytest.param(_body({"messages": "hi"}), ["messages"], id="messages-not-a-list"),
        pytest.param(
            _body({"messages": [{"role": "robot", "content": 5}]}),
            ["messages[0].role", "messages[0].content"],
            id="wrong-types",
        ),
        pytest.param(
            _body({"messages": [{"role": "user", "content": "x"}], "context": {"playbackTimeMs": -1}}),
            ["context.projectId", "context.playbackTimeMs"],
            id="bad-context",
        ),
        pytest.param(_body({"messages": []}), ["messages"], id="no-messages"),
        pytest.param(_body({"messages": [{"role": "tool", "content": "x"}]}), ["messages[0].toolResult"], id="tool"),
    ],
)
def test_invalid_bodies_get_400_naming_the_fields(openai_llm: FakeLLMServer, body: bytes, fields: list[str]) -> None:
    result = post_chat(body)
    assert result.status == 400, result.body
    assert [detail["field"] for detail in result.body["details"]] == fields
    for name in fields:
        assert name in result.body["error"]
    assert openai_llm.requests == []


def test_snake_case_bodies_are_accepted_too(openai_llm: FakeLLMServer) -> None:
    context = {"project_id": "p", "playback_time_ms": 5}
    assert post_chat(_hello(context=context)).status == 200


def test_body_over_the_limit_gets_413(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("AGENT_MAX_BODY_BYTES", "1000")
    big = _body({"messages": [{"role": "user", "content": "x" * 2000}]})
    result = post_chat(big)
    assert result.status == 413 and "1000" in result.body["error"]
    assert post_chat(_hello()).status == 200
    assert len(openai_llm.chat.requests) == 1


def test_tool_configuration_error_is_a_502_naming_the_tool(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.setenv("AGENT_ENABLED_TOOLS", "transcribe_video,summon_dragon")
    result = post_chat(_hello())
    assert result.status == 502 and "summon_dragon" in result.body["error"]


# --- the fault matrix -------------------------------------------------------------------------


@pytest.mark.parametrize("fault", list(openai_faults()))
def test_provider_faults_end_as_502_without_secrets(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fault: str
) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "1")
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    openai_llm.chat.default = openai_faults()[fault]
    with caplog.at_level(logging.DEBUG):
        result = post_chat(_hello())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert "LLM provider error" in caplog.text
    assert CANARY_API_KEY not in caplog.text


def test_gemini_faults_end_as_502(gemini_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    gemini_llm.gemini.push(error_reply(403, f"denied for {CANARY_API_KEY}"))
    with caplog.at_level(logging.DEBUG):
        result = post_chat(_hello())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert CANARY_API_KEY not in caplog.text


# --- the HTTP endpoint ------------------------------------------------------------------------


def test_endpoint_serves_the_same_handler(http: TestClient, openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {}, id="c1")))
    response = http.post(ROUTE_PATH, content=_hello())
    assert response.status_code == 200
    assert response.json()["toolCalls"][0]["id"] == "c1"
    assert http.post(ROUTE_PATH, content=b"{}").status_code == 400
    openai_llm.chat.push(error_reply(500))
    failed = http.post(ROUTE_PATH, content=_hello())
    assert (failed.status_code, failed.json()) == (502, {"error": "LLM provider error"})


def test_other_methods_get_a_json_405_naming_post(http: TestClient, openai_llm: FakeLLMServer) -> None:
    for method in ("GET", "PUT", "PATCH", "DELETE"):
        response = http.request(method, ROUTE_PATH)
        assert response.status_code == 405, method
        assert response.headers["allow"] == "POST"
        assert response.json() == {"error": f"Method {method} not allowed: use POST"}
    assert openai_llm.chat.requests == []


def test_endpoint_checks_content_length_and_streamed_bytes(http: TestClient, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("AGENT_MAX_BODY_BYTES", "1000")
    declared = http.post(ROUTE_PATH, content=b"x" * 1001)
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"x" * 100

    streamed = http.post(ROUTE_PATH, content=chunks())  # chunked: no Content-Length to trust
    assert streamed.status_code == 413
    bogus = http.post(ROUTE_PATH, content=_hello(), headers={"Content-Length": "many"})
    assert bogus.status_code in (400, 413)


def test_endpoint_requires_the_bearer_token_when_set(
    http: TestClient, openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.setenv("AGENT_API_TOKEN", "s3cret-token")
    assert http.post(ROUTE_PATH, content=_hello()).status_code == 401
    wrong = http.post(ROUTE_PATH, content=_hello(), headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert "s3cret-token" not in wrong.text
    right = http.post(ROUTE_PATH, content=_hello(), headers={"Authorization": "Bearer s3cret-token"})
    assert right.status_code == 200
    proxied = http.post(
        ROUTE_PATH, content=_hello(), headers={"Authorization": "Bearer s3cret-token", "X-Forwarded-For": "8.8.8.8"}
    )
    assert proxied.status_code == 200  # with a token, where the caller is does not matter


def test_endpoint_serves_only_loopback_without_a_token(http: TestClient, openai_llm: FakeLLMServer) -> None:
    assert http.post(ROUTE_PATH, content=_hello()).status_code == 200
    assert http.post(ROUTE_PATH, content=_hello(), headers={"X-Forwarded-For": "8.8.8.8"}).status_code == 403
    assert http.post(ROUTE_PATH, content=_hello(), headers={"Forwarded": "for=8.8.8.8"}).status_code == 403
    app = Starlette(routes=[Route(ROUTE_PATH, chat_endpoint, methods=["POST"])])
    with TestClient(app, client=("203.0.113.5", 40000)) as remote:
        denied = remote.post(ROUTE_PATH, content=_hello())
    assert denied.status_code == 403 and "AGENT_API_TOKEN" in denied.json()["error"]
    assert len(openai_llm.chat.requests) == 1


def test_authorize_and_loopback_rules(llm_env: pytest.MonkeyPatch) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.8.0.1") and is_loopback("::1")
    assert not is_loopback("10.0.0.1") and not is_loopback("localhost") and not is_loopback(None)
    assert authorize({}, "::1", load_settings()) is None
    denied = authorize({"X-Real-IP": "1.2.3.4"}, "127.0.0.1", load_settings())
    assert denied is not None and denied.status == 403
    llm_env.setenv("AGENT_API_TOKEN", "tok")
    assert authorize({"authorization": "bearer tok"}, "198.51.100.1", load_settings()) is None
    missing = authorize({}, "127.0.0.1", load_settings())
    assert missing is not None and missing.status == 401


# --- chat clients -----------------------------------------------------------------------------


def test_in_process_client_returns_responses_and_raises_client_errors(openai_llm: FakeLLMServer) -> None:
    client = ChatHandler(load_settings(), build_tool_registry(load_settings().enabled_tools).to_tool_schemas())
    openai_llm.chat.push(openai_text("Hello!"), error_reply(500))
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}], "context": CONTEXT})
    assert client.send(request).content == "Hello!"
    with pytest.raises(ChatError) as caught:
        client.send(request)
    assert caught.value.status == 502 and str(caught.value) == "LLM provider error"


def test_in_process_client_offers_the_callers_registry(openai_llm: FakeLLMServer) -> None:
    client = ChatHandler(load_settings(), build_tool_registry(["echo_context"]).to_tool_schemas())
    client.send(ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}]}))
    assert [tool["function"]["name"] for tool in openai_llm.chat.last.json["tools"]] == ["echo_context"]


def test_in_process_client_applies_the_same_validation(openai_llm: FakeLLMServer) -> None:
    with pytest.raises(ChatError) as caught:
        ChatHandler(load_settings(), build_tool_registry(load_settings().enabled_tools).to_tool_schemas()).send(
            ChatRequest(messages=[])
        )
    assert caught.value.status == 400 and "messages" in str(caught.value)


def test_http_client_transport_failure_is_a_client_error() -> None:
    with HttpChatClient("http://127.0.0.1:9/api/agent/chat", timeout=2) as client, pytest.raises(ChatError) as e:
        client.send(ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}]}))
    assert e.value.status is None


def test_gemini_tool_calls_through_the_route(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(gemini_function_calls(gemini_call("transcribe_video", {"assetId": "asset-a1"})))
    result = post_chat(_hello(context=CONTEXT))
    assert result.status == 200
    call = result.body["toolCalls"][0]
    assert call["name"] == "transcribe_video" and call["id"]
    assert "gemini" in result.body["providerMetadata"]
    wire = gemini_llm.gemini.last.json
    assert "asset-a1" in wire["systemInstruction"]["parts"][0]["text"]


# --- the system prompt ------------------------------------------------------------------------


def test_build_system_prompt_describes_workspace_and_tools() -> None:
    schema = ToolSchema(
        name="transcribe_video",
        description="Transcribe the speech of a video.",
        parameters=[ToolParameter(key="assetId", type="string", description="The asset to transcribe")],
    )
    prompt = build_system_prompt(AgentContext.model_validate(CONTEXT), [schema])
    for expected in [
        '"proj-7"',
        '"scene-2"',
        'id "asset-a1": "interview.mp4" (video, duration 1:35.250) (active, shown in the player)',
        'id "asset-b2": "voiceover.wav" (audio, duration unknown)',
        "Playhead position: 1:01.500 (61500 ms)",
        "- transcribe_video: Transcribe the speech of a video.",
        "assetId (string, optional) — The asset to transcribe",
    ]:
        assert expected in prompt
    empty = build_system_prompt(None)
    assert "No project is open" in empty and "No tools are available" in empty
    assert format_ms(3_723_004) == "1:02:03.004"
    assert "no media assets yet" in build_system_prompt(
        AgentContext(project_id="p", media_assets=[MediaAsset(id="x", name="y")][:0])
    )
