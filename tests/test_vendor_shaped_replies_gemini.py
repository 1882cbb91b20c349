"""``generateContent`` bodies shaped as Gemini sends them (2.5 and 3: thought signatures, thought parts,
parallel calls with and without ids, every finish reason that matters, blocked prompts, error bodies),
replayed by the fake server into the real ``google-genai`` SDK and our adapter."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import ProviderError, get_adapter
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatResponse, ToolCall, ToolResult
from fake_llm import FakeLLMServer, json_reply, raw_reply
from tests.chat_support import post_chat, stream_answer

SIGNATURE = base64.b64encode(b"\n\x91\x03\x01\xcb\xbd\xf0\xf0k\xd1\xa1\x16\x02+\x94\xb9\xabUyz").decode()
USAGE = {
    "promptTokenCount": 412,
    "candidatesTokenCount": 21,
    "totalTokenCount": 541,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 412}],
    "thoughtsTokenCount": 108,
}
QUOTA_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
]


def _response(candidate: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "usageMetadata": USAGE,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "XwWzaJ6XOr2hz7IP7ZvJsQs",
        **extra,
    }
    if candidate is not None:
        body["candidates"] = [{"index": 0, **candidate}]
    return body


def _model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"parts": list(parts), "role": "model"}}


def _chat(server: FakeLLMServer, body: dict[str, Any], messages: list[ChatMessage] | None = None) -> ChatResponse:
    server.gemini.push(json_reply(body))
    adapter = get_adapter(load_llm_config(load_settings()))
    return stream_answer(adapter, messages or [ChatMessage(role="user", content="What is said?")])


def test_gemini_2_5_call_without_id_with_signature(gemini_llm: FakeLLMServer) -> None:
    body = _response(
        {
            **_model(
                {
                    "functionCall": {"name": "transcribe_video", "args": {"assetId": "asset-a1", "startMs": 0}},
                    "thoughtSignature": SIGNATURE,
                }
            ),
            "finishReason": "STOP",
            "avgLogprobs": -0.41,
        }
    )
    response = _chat(gemini_llm, body)
    [call] = response.tool_calls or []
    assert call.name == "transcribe_video" and call.args == {"assetId": "asset-a1", "startMs": 0}
    assert call.id.startswith("call_")
    assert response.content == ""
    # The next request replays the turn with its signature and answers with the exact name, no id.
    history = [
        ChatMessage(role="user", content="What is said?"),
        ChatMessage(role="assistant", tool_calls=[call], provider_metadata=response.provider_metadata),
        ChatMessage(
            role="tool", tool_result=ToolResult(tool_call_id=call.id, name=call.name, result={"text": "hello"})
        ),
    ]
    _chat(gemini_llm, _response({**_model({"text": "It says hello."}), "finishReason": "STOP"}), history)
    sent = gemini_llm.gemini.last.json["contents"]
    assert sent[1]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert sent[2]["parts"][0]["functionResponse"] == {
        "name": "transcribe_video",
        "response": {"output": {"text": "hello"}},
    }


def test_gemini_3_parallel_calls_with_ids_and_one_signature(gemini_llm: FakeLLMServer) -> None:
    body = _response(
        {
            **_model(
                {"text": "Let me check both clips.", "thoughtSignature": SIGNATURE},
                {"functionCall": {"id": "7pnd8zzp", "name": "transcribe_video", "args": {"assetId": "a1"}}},
                {"functionCall": {"id": "x0kcq3ta", "name": "transcribe_video", "args": {"assetId": "b2"}}},
            ),
            "finishReason": "STOP",
        },
        modelVersion="gemini-3-pro-preview",
    )
    response = _chat(gemini_llm, body)
    assert [(c.id, c.args) for c in response.tool_calls or []] == [
        ("7pnd8zzp", {"assetId": "a1"}),
        ("x0kcq3ta", {"assetId": "b2"}),
    ]
    assert response.content == "Let me check both clips."


def test_thought_parts_never_become_the_answer(gemini_llm: FakeLLMServer) -> None:
    body = _response(
        {
            **_model(
                {"text": "**Planning the answer**\n\nThe user wants a summary...", "thought": True},
                {"text": "The clip is an interview.", "thoughtSignature": SIGNATURE},
            ),
            "finishReason": "STOP",
        }
    )
    assert _chat(gemini_llm, body).content == "The clip is an interview."
    only_thoughts = _response({**_model({"text": "Thinking...", "thought": True}), "finishReason": "STOP"})
    with pytest.raises(ProviderError, match="empty"):
        _chat(gemini_llm, only_thoughts)


def test_max_tokens_partial_text_is_returned_marked_as_cut(gemini_llm: FakeLLMServer) -> None:
    body = _response({**_model({"text": "The speaker first talks about"}), "finishReason": "MAX_TOKENS"})
    content = _chat(gemini_llm, body).content
    assert content.startswith("The speaker first talks about") and "cut off" in content


def test_max_tokens_spent_thinking_is_an_error_naming_it(gemini_llm: FakeLLMServer) -> None:
    """Gemini 2.5 can spend the whole budget on thoughts: the candidate has a role and no parts."""
    body = _response({"content": {"role": "model"}, "finishReason": "MAX_TOKENS"})
    with pytest.raises(ProviderError, match="MAX_TOKENS"):
        _chat(gemini_llm, body)


@pytest.mark.parametrize(
    "candidate",
    [
        {"finishReason": "SAFETY", "safetyRatings": SAFETY_RATINGS},
        {**_model({"text": "Here is the text of the song: "}), "finishReason": "RECITATION"},
        {"finishReason": "RECITATION", "citationMetadata": {"citationSources": [{"startIndex": 0, "endIndex": 120}]}},
        {"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: print(transcribe("},
        {"finishReason": "UNEXPECTED_TOOL_CALL"},
        {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "OTHER"},
        {"finishReason": "PROHIBITED_CONTENT"},
    ],
    ids=["safety", "recitation-partial", "recitation", "malformed-call", "unexpected-call", "other", "prohibited"],
)
def test_blocked_or_failed_candidates_are_502_with_the_reason_logged(
    gemini_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture, candidate: dict[str, Any]
) -> None:
    gemini_llm.gemini.push(json_reply(_response(candidate)))
    with caplog.at_level(logging.WARNING):
        result = post_chat(json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert candidate["finishReason"] in caplog.text


def test_blocked_prompt_without_candidates(gemini_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    body = _response(None, promptFeedback={"blockReason": "PROHIBITED_CONTENT", "safetyRatings": SAFETY_RATINGS})
    gemini_llm.gemini.push(json_reply(body))
    with caplog.at_level(logging.WARNING):
        result = post_chat(json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
    assert result.status == 502
    assert "PROHIBITED_CONTENT" in caplog.text


@pytest.mark.parametrize(
    ("status", "body", "logged"),
    [
        (
            429,
            {
                "error": {
                    "code": 429,
                    "message": "You exceeded your current quota, please check your plan and billing details.",
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [
                                {
                                    "quotaMetric": QUOTA_METRIC,
                                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                    "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                                    "quotaValue": "10",
                                }
                            ],
                        },
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"},
                    ],
                }
            },
            "RESOURCE_EXHAUSTED",
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
                }
            },
            "API key not valid",
        ),
        (
            404,
            {
                "error": {
                    "code": 404,
                    "message": "models/gemini-9 is not found for API version v1beta, or is not supported for "
                    "generateContent.",
                    "status": "NOT_FOUND",
                }
            },
            "NOT_FOUND",
        ),
    ],
    ids=["quota", "bad-key", "unknown-model"],
)
def test_gemini_error_bodies_become_502_with_the_cause_logged(
    gemini_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture, status: int, body: dict[str, Any], logged: str
) -> None:
    gemini_llm.gemini.push(json_reply(body, status))
    with caplog.at_level(logging.WARNING):
        result = post_chat(json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert logged in caplog.text and f"[{status}]" in caplog.text


def test_gemini_html_page_from_a_proxy(gemini_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
    for status in (502, 200):
        gemini_llm.gemini.push(raw_reply(page, status=status, content_type="text/html"))
        with caplog.at_level(logging.WARNING):
            result = post_chat(json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
        assert (result.status, result.body) == (502, {"error": "LLM provider error"})


def test_empty_texts_are_never_sent(gemini_llm: FakeLLMServer) -> None:
    """Gemini answers 400 "Unable to submit request because it has an empty text parameter"."""
    call = ToolCall(id="c1", name="transcribe_video", args={})
    history = [
        ChatMessage(role="user", content="Transcribe it"),
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="transcribe_video", result="hi")),
        ChatMessage(role="assistant", content="   "),
        ChatMessage(role="user", content=""),
        ChatMessage(role="user", content="And now?"),
    ]
    _chat(gemini_llm, _response({**_model({"text": "Done."}), "finishReason": "STOP"}), history)
    sent = gemini_llm.gemini.last.json["contents"]
    texts = [part["text"] for content in sent for part in content["parts"] if "text" in part]
    assert texts == ["Transcribe it", "And now?"]
    assert [content["role"] for content in sent] == ["user", "model", "user"]
    with pytest.raises(ProviderError, match="empty"):
        _chat(gemini_llm, _response({**_model({"text": "x"}), "finishReason": "STOP"}), [ChatMessage(role="user")])


def test_stored_turn_that_does_not_match_its_calls_is_rebuilt(gemini_llm: FakeLLMServer) -> None:
    """Metadata from elsewhere (an edited message, a client's own) must not replay calls the message lacks."""
    call = ToolCall(id="c1", name="transcribe_video", args={"assetId": "a1"})
    foreign = {"gemini": {"content": {"role": "model", "parts": [{"text": "unrelated"}]}, "callIds": {}}}
    history = [
        ChatMessage(role="user", content="Go"),
        ChatMessage(role="assistant", tool_calls=[call], provider_metadata=foreign),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="transcribe_video", result="hi")),
    ]
    _chat(gemini_llm, _response({**_model({"text": "Done."}), "finishReason": "STOP"}), history)
    model_turn = gemini_llm.gemini.last.json["contents"][1]
    assert model_turn["parts"] == [{"functionCall": {"name": "transcribe_video", "args": {"assetId": "a1"}}}]


def test_call_arguments_too_deep_to_store_are_a_provider_error(gemini_llm: FakeLLMServer) -> None:
    args: Any = "bottom"
    for _ in range(100):
        args = {"a": args}
    body = _response({**_model({"functionCall": {"name": "transcribe_video", "args": args}}), "finishReason": "STOP"})
    with pytest.raises(ProviderError, match="deeper"):
        _chat(gemini_llm, body)


def test_a_malformed_call_is_asked_again_once(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    """Gemini 2.x sometimes writes a call it cannot parse (``print(transcribe(...))``); a second sample
    usually works. Only when retries are allowed at all, and only once."""
    malformed = _response({"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: x("})
    fine = _response({**_model({"text": "It says hello."}), "finishReason": "STOP"})
    llm_env.setenv("LLM_MAX_RETRIES", "2")
    gemini_llm.gemini.push(json_reply(malformed))
    assert _chat(gemini_llm, fine).content == "It says hello."
    assert len(gemini_llm.gemini.requests) == 2
    gemini_llm.gemini.push(json_reply(malformed))
    with pytest.raises(ProviderError, match="MALFORMED_FUNCTION_CALL"):
        _chat(gemini_llm, malformed)
    assert len(gemini_llm.gemini.requests) == 4


def test_a_turn_without_a_role_is_replayed_as_the_model(gemini_llm: FakeLLMServer) -> None:
    body = _response({"content": {"parts": [{"functionCall": {"name": "transcribe_video", "args": {}}}]}})
    response = _chat(gemini_llm, body)
    [call] = response.tool_calls or []
    history = [
        ChatMessage(role="user", content="Go"),
        ChatMessage(role="assistant", tool_calls=[call], provider_metadata=response.provider_metadata),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=call.id, name=call.name, result=1)),
    ]
    _chat(gemini_llm, _response({**_model({"text": "Done."}), "finishReason": "STOP"}), history)
    assert [c.get("role") for c in gemini_llm.gemini.last.json["contents"]] == ["user", "model", "user"]
    stored = json.loads(json.dumps(response.provider_metadata))  # as storage gives it back: a fresh dict
    history[1] = history[1].model_copy(update={"provider_metadata": stored, "id": "other"})
    _chat(gemini_llm, _response({**_model({"text": "Done."}), "finishReason": "STOP"}), history)
    assert [c.get("role") for c in gemini_llm.gemini.last.json["contents"]] == ["user", "model", "user"]
