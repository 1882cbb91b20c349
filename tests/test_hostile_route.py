"""Hostile input on ``POST /api/agent/chat``: fuzzed bodies and bytes, malformed histories, lying headers,
cross-site callers. Whatever arrives, the answer is JSON with 200, 400, 401, 403 or 413 (or 502 from the
provider side), never a 500 or a traceback.

The route runs for real (Starlette endpoint over ASGI, and ``streamlit run app.py`` for the raw-socket
cases) against the fake LLM server; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from agent_app.errors import ChatError
from agent_app.request_validation import check_chat_request
from agent_app.routes.access import authorize, is_loopback
from agent_app.routes.chat import ROUTE_PATH, chat_endpoint
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatRequest, ToolCall, ToolResult
from fake_llm import CANARY_API_KEY, FakeLLMServer, openai_text
from tests.chat_support import post_chat
from testsupport.streamlit_server import run_streamlit

ALLOWED = {200, 400, 413, 502}
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _body(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _user(text: str = "Hello") -> dict[str, Any]:
    return {"role": "user", "content": text}


def _calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "toolCalls": [{"id": i, "name": "transcribe_video"} for i in ids]}


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "toolResult": {"toolCallId": call_id, "name": "transcribe_video", "result": {"ok": 1}}}


def _assert_json_answer(status: int, body: Any) -> None:
    assert status in ALLOWED, (status, body)
    assert isinstance(body, dict)
    if status == 200:
        assert isinstance(body["content"], str)
    else:
        assert isinstance(body["error"], str) and body["error"]


@pytest.fixture
def http(openai_llm: FakeLLMServer) -> Iterator[TestClient]:
    openai_llm.chat.default = openai_text("ok")
    app = Starlette(routes=[Route(ROUTE_PATH, chat_endpoint, methods=["POST"])])
    with TestClient(
        app, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 40000), raise_server_exceptions=False
    ) as client:
        yield client


# --- fuzzing ----------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "admin", 3])},
    optional={
        "content": st.text(max_size=30) | _json,
        "id": st.text(max_size=10),
        "toolCalls": st.lists(
            st.fixed_dictionaries({"id": st.text(max_size=5), "name": st.text(max_size=5)}, optional={"args": _json}),
            max_size=3,
        ),
        "toolResult": st.fixed_dictionaries(
            {"toolCallId": st.text(max_size=5), "name": st.text(max_size=5)}, optional={"result": _json}
        ),
        "timestamp": st.integers() | st.text(max_size=3),
    },
)
_request = st.fixed_dictionaries(
    {"messages": st.lists(_message, max_size=5) | _json},
    optional={
        "context": st.fixed_dictionaries(
            {"projectId": st.text(max_size=10) | _json},
            optional={
                "playbackTimeMs": st.integers() | st.floats(),
                "mediaAssets": st.lists(
                    st.fixed_dictionaries({"id": st.text(max_size=5), "name": st.text(max_size=30)}), max_size=3
                ),
            },
        )
        | _json
    },
)


@FUZZ
@given(payload=_request | _json)
def test_arbitrary_json_bodies_get_a_json_answer(openai_llm: FakeLLMServer, payload: Any) -> None:
    openai_llm.chat.default = openai_text("ok")
    result = post_chat(json.dumps(payload).encode())
    _assert_json_answer(result.status, result.body)
    json.dumps(result.body, allow_nan=False)  # the answer itself is strict JSON


@FUZZ
@given(body=st.binary(max_size=300) | _request.map(lambda p: json.dumps(p).encode()).map(lambda b: b[: len(b) // 2]))
def test_arbitrary_bytes_over_http_get_a_json_answer(http: TestClient, body: bytes) -> None:
    response = http.post(ROUTE_PATH, content=body)
    _assert_json_answer(response.status_code, response.json())


# --- bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b'{"messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400, "body"),
        (b'{"messages":[{"role":"user","x":' + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"}]}", 400, "body"),
        (b'{"messages":[{"role":"user","content":"\\ud800"}]}', 400, "body"),
        (b'{"messages":[{"role":"user","content":"\xff\xfe"}]}', 400, "body"),
        (b'{"messages":[{"role":"user","content":"hi"}],"messages":[]}', 400, "messages"),
        (b'{"messages":{"role":"user","content":"hi"}}', 400, "messages"),
        (
            b'{"messages":[{"role":"user","content":"hi"}],"context":{"projectId":"p","playbackTimeMs":-1}}',
            400,
            "context.playbackTimeMs",
        ),
        (b'{"messages":[{"role":"wizard","content":"hi"}]}', 400, "messages[0].role"),
        (b"\xef\xbb\xbf" + _body({"messages": [_user()]}), 400, "body"),
        (b"", 400, "body"),
    ],
    ids=[
        "nested-arrays",
        "nested-objects",
        "lone-surrogate",
        "invalid-utf8",
        "duplicate-keys",
        "messages-object",
        "negative-playhead",
        "unknown-role",
        "utf8-bom",
        "empty",
    ],
)
def test_hostile_bodies_get_400_naming_the_field(
    openai_llm: FakeLLMServer, body: bytes, status: int, field: str
) -> None:
    result = post_chat(body)
    assert result.status == status, result.body
    assert field in [detail["field"] for detail in result.body["details"]]
    assert openai_llm.requests == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"messages":[{"role":"user","content":"hi"}],"context":{"projectId":"p","playbackTimeMs":NaN}}',
        b'{"messages":[{"role":"user","content":"hi"}],"context":{"projectId":"p","playbackTimeMs":Infinity}}',
        b'{"messages":[{"role":"assistant","toolCalls":[{"id":"c1","name":"t","args":{"x":NaN}}]},'
        b'{"role":"tool","toolResult":{"toolCallId":"c1","name":"t","result":-Infinity}}]}',
    ],
    ids=["nan-playhead", "infinite-playhead", "nan-in-history"],
)
def test_nan_and_infinity_are_not_json(openai_llm: FakeLLMServer, body: bytes) -> None:
    """Python's JSON would pass them on to the provider as invalid JSON (a provider 400 seen as a 502)."""
    result = post_chat(body)
    assert result.status == 400, result.body
    assert openai_llm.requests == []


def test_huge_strings_and_many_messages_stay_within_the_limit(
    openai_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "1000000")  # a model whose window takes the 1.9 MB message
    openai_llm.chat.default = openai_text("ok")
    assert post_chat(_body({"messages": [_user("x" * 1_900_000)]})).status == 200
    assert post_chat(_body({"messages": [_user("h")] * 100_000})).status == 413
    assert post_chat(_body({"messages": [_user("h")] * 20_000})).status == 200
    assert len(openai_llm.chat.last.json["messages"]) == 20_001


# --- histories no provider accepts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "fields"),
    [
        ([_result("c1")], ["messages[0].toolResult.toolCallId"]),
        ([_user(), _calls("c1")], ["messages[1].toolCalls[0].id"]),
        ([_user(), _calls("c1", "c2"), _result("c1"), _user("go on")], ["messages[1].toolCalls[1].id"]),
        ([_user(), _calls("c1"), _result("c2")], ["messages[2].toolResult.toolCallId", "messages[1].toolCalls[0].id"]),
        ([_user(), _calls("c1"), _result("c1"), _result("c1")], ["messages[3].toolResult.toolCallId"]),
        (
            [_user(), _calls("c1", "c1"), _result("c1"), _result("c1")],
            ["messages[1].toolCalls[1].id", "messages[3].toolResult.toolCallId"],
        ),
        (
            [_user(), _calls("c1"), _user("hm"), _result("c1")],
            ["messages[1].toolCalls[0].id", "messages[3].toolResult.toolCallId"],
        ),
        ([{**_user(), "toolCalls": [{"id": "c1", "name": "transcribe_video"}]}], ["messages[0].toolCalls"]),
        ([_user(" \n\t"), _user("")], ["messages[0].content", "messages[1].content"]),
    ],
    ids=[
        "result-without-call",
        "call-without-result",
        "half-answered",
        "wrong-id",
        "answered-twice",
        "duplicate-call-ids",
        "result-after-a-user-message",
        "user-with-tool-calls",
        "blank-questions",
    ],
)
def test_histories_providers_reject_get_400(openai_llm: FakeLLMServer, messages: list[Any], fields: list[str]) -> None:
    result = post_chat(_body({"messages": messages}))
    assert result.status == 400, result.body
    assert sorted(detail["field"] for detail in result.body["details"]) == sorted(fields)
    assert openai_llm.requests == []


def _problem_fields(messages: list[ChatMessage]) -> list[str]:
    try:
        check_chat_request(ChatRequest(messages=messages))
    except ChatError as exc:
        return [detail["field"] for detail in exc.details or []]
    return []


def test_a_runs_later_requests_are_checked_as_a_whole_history() -> None:
    """Each request of a run is checked whole: what a request adds, a shorter history, and a history whose
    front is other messages."""
    question, call = (
        ChatMessage(role="user", content="Hi"),
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="t")]),
    )
    answer = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="t"))
    assert _problem_fields([question, call, answer]) == []
    again = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="t"))
    assert _problem_fields([question, call, answer, again]) == ["messages[3].toolResult.toolCallId"]
    assert _problem_fields([question, call, answer, ChatMessage(role="user", content="More")]) == []
    assert _problem_fields([question, call]) == ["messages[1].toolCalls[0].id"]
    blank = ChatMessage(role="user", content=" ")
    assert _problem_fields([blank, call, answer]) == ["messages[0].content"]


def test_well_formed_tool_histories_pass(openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.default = openai_text("ok")
    history = [_user(), _calls("c1", "c2"), _result("c2"), _result("c1"), _calls("c1"), _result("c1")]
    result = post_chat(_body({"messages": [*history, _user("thanks")]}))
    assert result.status == 200, result.body
    sent = openai_llm.chat.last.json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "user"]


def test_a_client_system_message_comes_after_ours(openai_llm: FakeLLMServer) -> None:
    """Decision: the route's caller is the owner (loopback or token), so a ``system`` message is allowed;
    ours stays first, so the workspace context and tool rules are always there."""
    openai_llm.chat.default = openai_text("ok")
    body = {"messages": [{"role": "system", "content": "Answer in French."}, _user()]}
    assert post_chat(_body(body)).status == 200
    sent = openai_llm.chat.last.json["messages"]
    assert sent[0]["role"] == "system" and "## Workspace" in sent[0]["content"]
    assert sent[1] == {"role": "system", "content": "Answer in French."}


# --- over HTTP ----------------------------------------------------------------------------------


def test_wrong_content_type_and_lying_headers(http: TestClient, openai_llm: FakeLLMServer) -> None:
    hello = _body({"messages": [_user()]})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        assert http.post(ROUTE_PATH, content=hello, headers={"Content-Type": content_type}).status_code == 200
    form = http.post(ROUTE_PATH, data={"messages": "x"})
    _assert_json_answer(form.status_code, form.json())
    assert form.status_code == 400
    negative = http.post(ROUTE_PATH, content=hello, headers={"Content-Length": "-5"})
    _assert_json_answer(negative.status_code, negative.json())


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:3000"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Host": "rebound.evil.example:8501"},
        {"Host": "[::1"},
        {"Origin": "http://[bad"},
    ],
    ids=[
        "foreign-origin",
        "null-origin",
        "other-local-port",
        "cross-site",
        "same-site",
        "dns-rebinding",
        "broken-host",
        "broken-origin",
    ],
)
def test_cross_site_browser_requests_from_loopback_are_refused(
    http: TestClient, openai_llm: FakeLLMServer, headers: dict[str, str]
) -> None:
    """Without a token, loopback is the only check; a page in the owner's browser is loopback too."""
    response = http.post(ROUTE_PATH, content=_body({"messages": [_user()]}), headers=headers)
    assert response.status_code == 403, response.text
    assert "cross-site" in response.json()["error"]
    assert openai_llm.requests == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://127.0.0.1:8501", "Sec-Fetch-Site": "same-origin"},
        {"Host": "localhost:8501", "Origin": "http://localhost:8501"},
        {"Host": "[::1]:8501"},
        {"Host": f"{socket.gethostname()}:8501"},
        {"Sec-Fetch-Site": "none"},
    ],
    ids=["no-browser-headers", "same-origin", "localhost", "ipv6-host", "own-hostname", "typed-url"],
)
def test_same_origin_and_plain_clients_are_served(
    http: TestClient, openai_llm: FakeLLMServer, headers: dict[str, str]
) -> None:
    response = http.post(ROUTE_PATH, content=_body({"messages": [_user()]}), headers=headers)
    assert response.status_code == 200, response.text


PROXY_HEADERS = (
    "Forwarded",
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Forwarded-Port",
    "X-Forwarded-Server",
    "X-Forwarded-Prefix",
    "Via",
    "X-Real-IP",
    "CF-Connecting-IP",
    "True-Client-IP",
    "X-Client-IP",
    "X-Original-Forwarded-For",
    "Fastly-Client-IP",
    "X-Cluster-Client-IP",
    "X-Azure-ClientIP",
)


@pytest.mark.parametrize("header", PROXY_HEADERS)
def test_a_proxy_header_makes_a_loopback_request_remote(
    http: TestClient, openai_llm: FakeLLMServer, header: str
) -> None:
    """A proxy on this machine connects from loopback; the header it adds says the client is elsewhere."""
    for spelling in (header, header.lower()):
        response = http.post(ROUTE_PATH, content=_body({"messages": [_user()]}), headers={spelling: "203.0.113.7"})
        assert response.status_code == 403, (spelling, response.text)
        assert "AGENT_API_TOKEN" in response.json()["error"]
    assert openai_llm.chat.requests == []


def test_ordinary_client_headers_are_not_proxy_headers(http: TestClient, openai_llm: FakeLLMServer) -> None:
    headers = {
        "User-Agent": "curl/8.5.0",
        "Accept": "application/json",
        "Accept-Encoding": "gzip",
        "Content-Type": "application/json",
        "Connection": "keep-alive",
        "X-Request-Id": "abc",
        "Cache-Control": "no-cache",
    }
    assert http.post(ROUTE_PATH, content=_body({"messages": [_user()]}), headers=headers).status_code == 200


def test_loopback_in_every_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_API_TOKEN", raising=False)
    for host in ("127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "::1%lo"):
        assert is_loopback(host), host
    for other in ("::ffff:10.0.0.1", "10.0.0.1", "0.0.0.0", "::", "localhost", "", None, "127.0.0.1.evil"):
        assert not is_loopback(other), other
    assert (
        authorize({}, "::ffff:127.0.0.1", load_settings()) is None
    )  # a dual-stack server reports IPv4 loopback like this
    for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP", "x-forwarded-host"):
        denied = authorize({header: "127.0.0.1"}, "127.0.0.1", load_settings())
        assert denied is not None and denied.status == 403


def test_token_edge_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_API_TOKEN", "s3cret-token")
    for value in ("Bearer s3cret-token", "bearer s3cret-token", "Bearer  s3cret-token ", "BEARER s3cret-token"):
        assert authorize({"Authorization": value}, "203.0.113.9", load_settings()) is None, value
    wrong = ("Bearer", "Bearer ", "s3cret-token", "Basic s3cret-token", "Bearer s3cret-toke", "Bearer s3cret-tokenX")
    for value in (*wrong, "Bearer s3cret token", "Bearer \u00e9"):
        denied = authorize({"Authorization": value}, "127.0.0.1", load_settings())
        assert denied is not None and denied.status == 401, value
        assert "s3cret" not in json.dumps(denied.wire_body())


@pytest.mark.slow
def test_raw_socket_abuse_on_the_real_server(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """Content-Length lying both ways, chunked over the limit, garbage: the real server answers JSON
    or closes, logs no traceback, and keeps serving."""
    fake_llm.chat.default = openai_text("still here")
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_BASE_URL": fake_llm.openai_base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": CANARY_API_KEY,
        "LLM_MAX_RETRIES": "0",
        "AGENT_MAX_BODY_BYTES": "20000",
        "AGENT_API_TOKEN": "",
        "AGENT_DATA_DIR": str(tmp_path / "data"),
    }
    hello = _body({"messages": [_user()]})
    with run_streamlit(env, tmp_path) as server:
        port = int(server.base_url.rsplit(":", 1)[1])

        def raw(request: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
                sock.sendall(request)
                chunks = []
                try:
                    while chunk := sock.recv(65536):
                        chunks.append(chunk)
                except TimeoutError:  # a server still waiting for the promised bytes
                    pass
                return b"".join(chunks)

        head = b"POST /api/agent/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        head += b"Connection: close\r\n"
        shorter = raw(head + f"Content-Length: {len(hello) - 10}\r\n\r\n".encode() + hello)
        assert shorter.startswith(b"HTTP/1.1 400"), shorter[:200]
        longer = raw(head + f"Content-Length: {len(hello) + 50}\r\n\r\n".encode() + hello)
        assert b"500" not in longer.split(b"\r\n", 1)[0]
        chunked = (
            head
            + b"Transfer-Encoding: chunked\r\n\r\n"
            + b"".join(b"%x\r\n%s\r\n" % (5000, b"x" * 5000) for _ in range(6))
            + b"0\r\n\r\n"
        )
        assert raw(chunked).startswith(b"HTTP/1.1 413")
        huge = raw(head + b"Content-Length: 99999999999999999999999\r\n\r\n")
        assert b"500" not in huge.split(b"\r\n", 1)[0]
        assert raw(b"\x00\xff garbage\r\n\r\n").split(b"\r\n", 1)[0][9:12] != b"500"
        evil = httpx.post(
            f"{server.base_url}/api/agent/chat", content=hello, headers={"Origin": "https://evil.example"}
        )
        assert evil.status_code == 403
        ok = httpx.post(f"{server.base_url}/api/agent/chat", content=hello, timeout=30)
        assert ok.status_code == 200 and ok.json()["content"] == "still here"
    output = server.output()
    assert "Traceback" not in output
    assert CANARY_API_KEY not in output


def test_a_body_of_many_bad_messages_gets_a_short_answer(openai_llm: FakeLLMServer) -> None:
    body = _body({"messages": [{"role": "wizard"}] * 90_000})
    assert len(body) < 2_000_000
    result = post_chat(body)
    assert result.status == 400
    assert len(json.dumps(result.body)) < 10_000
    assert "and 89990 more" in result.body["error"] and len(result.body["details"]) == 50
