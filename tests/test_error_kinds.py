"""Every failure of the typed handler carries its kind, on both providers, while the route's wire answer
stays the spec's bare text: the real SDKs against the fake server answering 401, 403, 429, a hang, a 500
and a context-window refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_app.chat_handler import ChatHandler
from agent_app.errors import ChatError, ErrorKind
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatRequest
from fake_llm import FakeLLMServer, Reply, error_reply, hang, json_reply
from tests.chat_support import post_chat

HELLO = ChatRequest(messages=[ChatMessage(role="user", content="Hi")])
OPENAI_TOO_LONG = json_reply(
    {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    status=400,
)
GEMINI_TOO_LONG = error_reply(
    400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
)
FAULTS: dict[str, tuple[Reply, ErrorKind]] = {
    "401": (error_reply(401, "Incorrect API key provided"), ErrorKind.PROVIDER_REJECTED_KEY),
    "403": (error_reply(403, "Permission denied on this model"), ErrorKind.PROVIDER_REJECTED_KEY),
    "429": (error_reply(429, "Rate limit reached", retry_after_ms=1), ErrorKind.RATE_LIMITED),
    "hang": (hang(10), ErrorKind.TIMED_OUT),
    "500": (error_reply(500, "upstream exploded"), ErrorKind.PROVIDER_FAILED),
    "400 other": (error_reply(400, "Invalid value for 'model'"), ErrorKind.PROVIDER_FAILED),
}


def _fail(server: FakeLLMServer, endpoint: str, reply: Reply) -> ChatError:
    getattr(server, endpoint).push(reply)
    with pytest.raises(ChatError) as caught:
        ChatHandler(load_settings()).send(HELLO)
    return caught.value


@pytest.mark.parametrize("fault", FAULTS)
def test_openai_failures_carry_their_kind(fault: str, openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    if fault == "hang":  # only there: a loaded machine may take longer than that to answer an error
        llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    reply, kind = FAULTS[fault]
    error = _fail(openai_llm, "chat", reply)
    assert (error.kind, error.status, str(error)) == (kind, 502, "LLM provider error")


@pytest.mark.parametrize("fault", FAULTS)
def test_gemini_failures_carry_their_kind(fault: str, gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    if fault == "hang":  # only there: a loaded machine may take longer than that to answer an error
        llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    reply, kind = FAULTS[fault]
    error = _fail(gemini_llm, "gemini", reply)
    assert (error.kind, error.status, str(error)) == (kind, 502, "LLM provider error")


def test_context_too_long_is_recognized_on_both_providers(
    fake_llm: FakeLLMServer, openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    # Refused twice: the handler answers the first refusal with one smaller retry (test_context_window.py).
    openai_llm.chat.push(OPENAI_TOO_LONG)
    assert _fail(openai_llm, "chat", OPENAI_TOO_LONG).kind is ErrorKind.CONTEXT_TOO_LONG
    llm_env.setenv("LLM_PROVIDER", "gemini")
    llm_env.setenv("GOOGLE_GEMINI_BASE_URL", fake_llm.gemini_base_url)
    fake_llm.gemini.push(GEMINI_TOO_LONG)
    assert _fail(fake_llm, "gemini", GEMINI_TOO_LONG).kind is ErrorKind.CONTEXT_TOO_LONG


@pytest.mark.parametrize("fault", ["401", "429", "500"])
def test_the_wire_answer_stays_bare_whatever_the_kind(fault: str, openai_llm: FakeLLMServer) -> None:
    openai_llm.chat.push(FAULTS[fault][0])
    result = post_chat(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})


def test_configuration_and_request_errors_carry_their_kind(llm_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ChatError) as missing:
        ChatHandler(load_settings()).send(HELLO)
    assert missing.value.kind is ErrorKind.MISSING_CONFIGURATION and missing.value.status == 502
    for name, value in {"LLM_PROVIDER": "nope", "LLM_MODEL": "m", "LLM_API_KEY": "k"}.items():
        llm_env.setenv(name, value)
    with pytest.raises(ChatError) as unknown:
        ChatHandler(load_settings()).send(HELLO)
    assert unknown.value.kind is ErrorKind.UNKNOWN_PROVIDER and str(unknown.value) == "Unknown LLM provider: nope"
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "-1")
    with pytest.raises(ChatError) as invalid:
        ChatHandler(load_settings()).send(HELLO)
    assert invalid.value.kind is ErrorKind.INVALID_CONFIGURATION and "LLM_TIMEOUT_SECONDS" in str(invalid.value)
    with pytest.raises(ChatError) as empty:
        ChatHandler(load_settings()).send(ChatRequest(messages=[]))
    assert empty.value.kind is ErrorKind.INVALID_REQUEST and empty.value.status == 400


def test_an_unexpected_role_is_an_error_in_both_adapters() -> None:
    """Roles are matched exhaustively: a role no branch knows (only a bypassed validation can make one) fails
    loudly instead of being sent as some other role."""
    from agent_app.providers.gemini_request import messages_to_gemini
    from agent_app.providers.openai_request import messages_to_openai

    robot: Any = "robot"
    odd = ChatMessage.model_construct(id="m1", role=robot, content="beep")
    with pytest.raises(AssertionError):
        messages_to_openai("", [odd])
    with pytest.raises(AssertionError):
        messages_to_gemini([odd])
