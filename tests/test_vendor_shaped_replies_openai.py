"""Chat-completion bodies shaped as the real servers send them (OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
Groq, OpenRouter), replayed by the fake server into the real ``openai`` SDK and our adapter.

The payloads are written out here field by field after the servers' documented and observed responses
(extra vendor fields, ``null`` content next to tool calls, ``index`` inside tool calls, ids in every local
style, reasoning fields), so an SDK or adapter change that trips over any of them fails here first.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import ProviderError, get_adapter
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatResponse, ToolCall, ToolResult
from fake_llm import CANARY_API_KEY, FakeLLMServer, json_reply, raw_reply
from tests.chat_support import post_chat, stream_answer

TRANSCRIBE_ARGS = '{"assetId": "asset-a1", "language": "en"}'


def _completion(message: dict[str, Any], finish_reason: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        **extra,
    }


def _chat(server: FakeLLMServer, payload: dict[str, Any] | bytes) -> ChatResponse:
    server.chat.push(json_reply(payload) if isinstance(payload, dict) else raw_reply(payload))
    adapter = get_adapter(load_llm_config(load_settings()))
    return stream_answer(adapter, [ChatMessage(role="user", content="What is said?")])


def _calls(response: ChatResponse) -> list[tuple[str, str, dict[str, Any]]]:
    return [(call.id, call.name, call.args) for call in response.tool_calls or []]


# --- OpenAI -------------------------------------------------------------------------------------


def test_openai_parallel_tool_calls_with_null_content(openai_llm: FakeLLMServer) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_12345xyz",
                "type": "function",
                "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
            },
            {
                "id": "call_67890abc",
                "type": "function",
                "function": {"name": "transcribe_video", "arguments": '{"assetId": "asset-b2"}'},
            },
        ],
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
    }
    response = _chat(
        openai_llm,
        _completion(message, "tool_calls", service_tier="default", system_fingerprint="fp_fc9f1d7035"),
    )
    assert response.content == ""
    assert _calls(response) == [
        ("call_12345xyz", "transcribe_video", {"assetId": "asset-a1", "language": "en"}),
        ("call_67890abc", "transcribe_video", {"assetId": "asset-b2"}),
    ]
    assert response.provider_metadata is None


def test_openai_text_with_annotations_and_refusal_null(openai_llm: FakeLLMServer) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": "It says hello.", "refusal": None, "annotations": []}
    assert _chat(openai_llm, _completion(message, "stop")).content == "It says hello."


def test_openai_refusal_with_null_content_is_the_answer(openai_llm: FakeLLMServer) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": "I'm sorry, I can't help with that."}
    assert _chat(openai_llm, _completion(message, "stop")).content == "I'm sorry, I can't help with that."


def test_legacy_function_call_becomes_a_tool_call(openai_llm: FakeLLMServer) -> None:
    """Servers still speaking the deprecated ``functions`` protocol answer with ``function_call``."""
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
    }
    response = _chat(openai_llm, _completion(message, "function_call"))
    [(call_id, name, args)] = _calls(response)
    assert call_id.startswith("call_") and name == "transcribe_video" and args["assetId"] == "asset-a1"


def test_length_cut_text_is_returned_marked_as_cut(openai_llm: FakeLLMServer) -> None:
    """Decision: a partial answer is worth showing, but never as if it were complete."""
    message = {"role": "assistant", "content": "The speaker starts by saying that the", "refusal": None}
    response = _chat(openai_llm, _completion(message, "length"))
    assert response.content.startswith("The speaker starts by saying that the")
    assert "cut off" in response.content


@pytest.mark.parametrize("finish_reason", ["content_filter", "length"])
def test_nothing_but_a_stop_reason_is_a_provider_error_naming_it(openai_llm: FakeLLMServer, finish_reason: str) -> None:
    message = {"role": "assistant", "content": None, "refusal": None}
    with pytest.raises(ProviderError, match=finish_reason):
        _chat(openai_llm, _completion(message, finish_reason))


# --- local and hosted OpenAI-compatible servers -----------------------------------------------


def test_ollama_tool_calls_with_index_and_stop_finish_reason(openai_llm: FakeLLMServer) -> None:
    for finish_reason in ("tool_calls", "stop"):
        payload = {
            "id": "chatcmpl-245",
            "object": "chat.completion",
            "created": 1744446075,
            "model": "qwen2.5:7b",
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": "call_hk81qg8b",
                                "index": 0,
                                "type": "function",
                                "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
                            }
                        ],
                    },
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 210, "completion_tokens": 24, "total_tokens": 234},
        }
        response = _chat(openai_llm, payload)
        assert _calls(response) == [("call_hk81qg8b", "transcribe_video", {"assetId": "asset-a1", "language": "en"})]


def test_vllm_tool_call_ids_and_reasoning_content(openai_llm: FakeLLMServer) -> None:
    payload = {
        "id": "chatcmpl-9f310a87d90b40e98cb2a5b3d4a81700",
        "object": "chat.completion",
        "created": 1755140830,
        "model": "Qwen/Qwen3-8B",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "annotations": None,
                    "audio": None,
                    "function_call": None,
                    "tool_calls": [
                        {
                            "id": "chatcmpl-tool-e8cdb13de9204716960f82368dbc191d",
                            "type": "function",
                            "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
                        }
                    ],
                    "reasoning_content": "The user asks what is said; I should transcribe the active asset.",
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
                "stop_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 300, "total_tokens": 326, "completion_tokens": 26, "prompt_tokens_details": None},
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }
    response = _chat(openai_llm, payload)
    assert response.content == ""  # the reasoning is not the answer
    assert _calls(response)[0][0] == "chatcmpl-tool-e8cdb13de9204716960f82368dbc191d"

    final = json.loads(json.dumps(payload))
    final["choices"][0]["message"].update(content="\n\nIt says hello.", tool_calls=[], reasoning_content="Done.")
    final["choices"][0]["finish_reason"] = "stop"
    answered = _chat(openai_llm, final)  # vLLM sends an empty tool_calls list with a final answer
    assert answered.tool_calls is None and answered.content == "\n\nIt says hello."


def test_llama_cpp_calls_with_missing_ids_and_object_arguments(openai_llm: FakeLLMServer) -> None:
    payload = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
                        },
                        {
                            "type": "function",
                            "id": "",
                            "function": {"name": "transcribe_video", "arguments": {"assetId": "asset-b2"}},
                        },
                    ],
                },
            }
        ],
        "created": 1737060000,
        "model": "gpt-3.5-turbo",
        "system_fingerprint": "b4500-adfb9a46",
        "object": "chat.completion",
        "usage": {"completion_tokens": 30, "prompt_tokens": 250, "total_tokens": 280},
        "id": "chatcmpl-7b4aTm1kqNbyhRNcVEwVqUgnM7H6AIXD",
        "timings": {"prompt_n": 250, "prompt_ms": 80.1, "predicted_n": 30, "predicted_ms": 310.5},
    }
    calls = _calls(_chat(openai_llm, payload))
    assert [args for _, _, args in calls] == [{"assetId": "asset-a1", "language": "en"}, {"assetId": "asset-b2"}]
    assert all(call_id.startswith("call_") for call_id, _, _ in calls) and calls[0][0] != calls[1][0]


def test_lm_studio_numeric_ids_and_stats(openai_llm: FakeLLMServer) -> None:
    payload = {
        "id": "chatcmpl-gb1t1uqzefudice8ntxd9i",
        "object": "chat.completion",
        "created": 1730913210,
        "model": "lmstudio-community/qwen2.5-7b-instruct",
        "choices": [
            {
                "index": 0,
                "logprobs": None,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "365174485",
                            "type": "function",
                            "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 414, "completion_tokens": 29, "total_tokens": 443},
        "stats": {},
        "system_fingerprint": "lmstudio-community/qwen2.5-7b-instruct",
    }
    assert _calls(_chat(openai_llm, payload))[0][0] == "365174485"


def test_groq_x_groq_and_openrouter_provider_fields(openai_llm: FakeLLMServer) -> None:
    call = {
        "id": "call_d5wg",
        "type": "function",
        "function": {"name": "transcribe_video", "arguments": TRANSCRIBE_ARGS},
    }
    groq = _completion(
        {"role": "assistant", "tool_calls": [call]},
        "tool_calls",
        system_fingerprint="fp_a4265e44d5",
        x_groq={"id": "req_01jbd6g2qdfw2adyrt2az8hz4w"},
        usage_breakdown=None,
    )
    groq["usage"].update(queue_time=0.0172, prompt_time=0.0057, completion_time=0.0467, total_time=0.0524)
    assert _calls(_chat(openai_llm, groq))[0][0] == "call_d5wg"

    openrouter = _completion(
        {
            "role": "assistant",
            "content": "",
            "refusal": None,
            "reasoning": None,
            "tool_calls": [{**call, "id": "tool_0_transcribe_video", "index": 0}],
        },
        "tool_calls",
        provider="OpenAI",
    )
    openrouter["choices"][0]["native_finish_reason"] = "tool_calls"
    assert _calls(_chat(openai_llm, openrouter))[0][0] == "tool_0_transcribe_video"


def test_openrouter_error_inside_a_200_is_a_provider_error_with_its_message(openai_llm: FakeLLMServer) -> None:
    body = {"error": {"message": "Provider returned error", "code": 502, "metadata": {"provider_name": "Fireworks"}}}
    with pytest.raises(ProviderError, match="Provider returned error"):
        _chat(openai_llm, body)


# --- error bodies over the route ----------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, your messages "
                    "resulted in 131072 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            {},
            "context_length_exceeded",
        ),
        (
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {CANARY_API_KEY[:8]}********{CANARY_API_KEY[-4:]}. "
                    "You can find your API key at https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            {},
            "AuthenticationError",
        ),
        (
            404,
            {
                "error": {
                    "message": "The model `gpt-9` does not exist or you do not have access to it.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "model_not_found",
                }
            },
            {},
            "LLM_BASE_URL",
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): "
                    "Limit 30000, Used 29800, Requested 900. Please try again in 1.4s.",
                    "type": "tokens",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
            {"retry-after": "2", "x-ratelimit-remaining-tokens": "200"},
            "RateLimitError",
        ),
    ],
    ids=["context-length", "bad-key", "unknown-model", "rate-limit"],
)
def test_openai_error_bodies_become_502_with_the_cause_logged(
    openai_llm: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
    case: tuple[int, dict[str, Any], dict[str, str], str],
) -> None:
    status, body, headers, logged = case
    # Twice: a context-length refusal is retried once, smaller, before it is the provider's failure.
    openai_llm.chat.push(json_reply(body, status, headers), json_reply(body, status, headers))
    with caplog.at_level(logging.WARNING):
        result = post_chat(json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode())
    assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert logged in caplog.text and f"[{status}]" in caplog.text
    assert CANARY_API_KEY not in caplog.text


def test_html_pages_from_a_proxy(openai_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    page = (
        b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
        b"</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
    )
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    for status in (502, 200):
        openai_llm.chat.push(raw_reply(page, status=status, content_type="text/html"))
        with caplog.at_level(logging.WARNING):
            result = post_chat(body)
        assert (result.status, result.body) == (502, {"error": "LLM provider error"})
    assert "502 Bad Gateway" in caplog.text
    assert "Traceback" not in caplog.text


def test_ids_openai_would_refuse_are_aliased_consistently(openai_llm: FakeLLMServer) -> None:
    """OpenAI refuses a history id over 40 characters ("string too long"); vLLM's are 46, and a conversation
    started on another server or sent by a client may carry anything."""
    long_id = "chatcmpl-tool-e8cdb13de9204716960f82368dbc191d"
    odd_id = 'call 1/../"\n'
    history: list[ChatMessage] = [ChatMessage(role="user", content="Go")]
    for call_id in (long_id, odd_id, "call_ok-1"):
        history.append(
            ChatMessage(role="assistant", tool_calls=[ToolCall(id=call_id, name="transcribe_video", args={})])
        )
        history.append(
            ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=call_id, name="transcribe_video", result=1))
        )
    openai_llm.chat.push(json_reply(_completion({"role": "assistant", "content": "ok"}, "stop")))
    stream_answer(get_adapter(load_llm_config(load_settings())), history)
    sent = openai_llm.chat.last.json["messages"]
    call_ids = [m["tool_calls"][0]["id"] for m in sent if m["role"] == "assistant"]
    result_ids = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert call_ids == result_ids
    assert call_ids[2] == "call_ok-1"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", call_id) for call_id in call_ids)
    assert len(set(call_ids)) == 3


def test_content_as_a_list_of_typed_parts(openai_llm: FakeLLMServer) -> None:
    """Mistral's reasoning models answer with typed parts; only ``text`` parts are the answer."""
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "The user wants..."}]},
            {"type": "text", "text": "It says "},
            {"type": "text", "text": "hello."},
        ],
        "tool_calls": None,
        "prefix": False,
    }
    assert _chat(openai_llm, _completion(message, "stop")).content == "It says hello."
