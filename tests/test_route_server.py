"""``POST /api/agent/chat`` over real HTTP, served by ``streamlit run app.py`` beside the page."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_app.chat_clients import HttpChatClient
from agent_app.errors import ChatError
from agent_app.types import ChatRequest
from fake_llm import CANARY_API_KEY, FakeLLMServer, error_reply, openai_tool_calls, tool_call
from testsupport.streamlit_server import run_streamlit

pytestmark = pytest.mark.slow

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}


def _env(fake: FakeLLMServer, **extra: str) -> dict[str, str]:
    return {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_BASE_URL": fake.openai_base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": CANARY_API_KEY,
        "LLM_MAX_RETRIES": "0",
        "AGENT_MAX_BODY_BYTES": "50000",
        "AGENT_API_TOKEN": "",
        **extra,
    }


def test_route_over_http_without_token(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    bodies: list[str] = []
    with run_streamlit(_env(fake_llm, AGENT_DATA_DIR=str(tmp_path / "data")), tmp_path) as server:
        url = f"{server.base_url}/api/agent/chat"
        with httpx.Client(timeout=30) as http:

            def post(**kwargs: object) -> httpx.Response:
                response = http.post(url, **kwargs)  # type: ignore[arg-type]
                bodies.append(response.text)
                return response

            empty = post(json={})
            assert empty.status_code == 400 and "messages" in empty.json()["error"]

            fake_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {"assetId": "a1"}, id="call_1")))
            ok = post(json=HELLO)
            assert ok.status_code == 200
            assert ok.json()["toolCalls"] == [{"id": "call_1", "name": "transcribe_video", "args": {"assetId": "a1"}}]

            fake_llm.chat.push(error_reply(401, f"Incorrect API key provided: {CANARY_API_KEY}"))
            failed = post(json=HELLO)
            assert (failed.status_code, failed.json()) == (502, {"error": "LLM provider error"})

            proxied = post(json=HELLO, headers={"X-Forwarded-For": "203.0.113.9"})
            assert proxied.status_code == 403

            def chunks() -> Iterator[bytes]:
                yield b'{"messages": [{"role": "user", "content": "'
                for _ in range(100):
                    yield b"x" * 1000
                yield b'"}]}'

            assert post(content=chunks()).status_code == 413
            assert post(content=b"y" * 60_000).status_code == 413

        # A body that never arrives in full: the client gives up mid-request; the server shrugs it off.
        port = int(server.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(
                b"POST /api/agent/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 5000\r\n\r\n{"messages": ['
            )
        with HttpChatClient(url, timeout=30) as client:
            fake_llm.chat.push(error_reply(500))
            with pytest.raises(ChatError) as caught:
                client.send(ChatRequest.model_validate(HELLO))
            assert caught.value.status == 502
            assert client.send(ChatRequest.model_validate(HELLO)).content == "fake reply"
    output = server.output()
    assert "Traceback" not in output
    assert "LLM provider error" in output and "AuthenticationError" in output  # the cause is logged...
    assert CANARY_API_KEY not in output  # ...without the key
    assert all(CANARY_API_KEY not in body for body in bodies)
    assert fake_llm.chat.last.headers["authorization"] == f"Bearer {CANARY_API_KEY}"


def test_route_over_http_requires_the_token(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    env = _env(fake_llm, AGENT_API_TOKEN="route-token-123", AGENT_DATA_DIR=str(tmp_path / "data"))
    with run_streamlit(env, tmp_path) as server:
        url = f"{server.base_url}/api/agent/chat"
        assert httpx.post(url, json=HELLO).status_code == 401
        wrong = httpx.post(url, json=HELLO, headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401 and "route-token-123" not in wrong.text
        with HttpChatClient(url, token="route-token-123", timeout=30) as client:
            assert client.send(ChatRequest.model_validate(HELLO)).content == "fake reply"
        with HttpChatClient(url, token="nope", timeout=30) as client, pytest.raises(ChatError) as caught:
            client.send(ChatRequest.model_validate(HELLO))
        assert caught.value.status == 401
    assert CANARY_API_KEY not in server.output()
