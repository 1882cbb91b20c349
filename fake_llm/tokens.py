"""Context limits: an endpoint that counts each request's input tokens and refuses one over its limit, as the
real APIs do (see ``EndpointScript.context_limit``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from fake_llm.replies import Reply, json_payload_reply

# --- Context limits ---------------------------------------------------------------------------

_PRE_TOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")
"""GPT-4's pre-tokenizer, approximately: a real tokenizer makes at least one token of each of these pieces."""


def count_tokens(text: str) -> int:
    """Tokens of ``text`` the way a BPE server counts common words: one per pre-token."""
    return len(_PRE_TOKEN.findall(text))


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def count_openai_input(body: dict[str, Any]) -> int:
    """A chat completion's input tokens: 3 to prime the answer, 4 per message plus its text, calls and
    results, and the tools' JSON (OpenAI's own accounting, with :func:`count_tokens` for the tokenizer)."""
    total = 3 + (count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0)
    for message in body.get("messages") or []:
        total += 4
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        total += count_tokens(content or "")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += 4 + count_tokens(str(function.get("name", ""))) + count_tokens(str(function.get("arguments", "")))
    return total


def count_gemini_input(body: dict[str, Any]) -> int:
    """A ``generateContent`` request's input tokens: text, function calls and responses of every part of
    ``contents`` and ``systemInstruction``, and the tools' JSON."""
    contents = list(body.get("contents") or [])
    if isinstance(body.get("systemInstruction"), dict):
        contents.append(body["systemInstruction"])
    total = count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0
    for content in contents:
        total += 4
        for part in content.get("parts") or []:
            for key in ("text", "functionCall", "functionResponse"):
                if key in part:
                    total += count_tokens(_json_text(part[key]))
    return total


def openai_context_exceeded(limit: int, counted: int) -> Reply:
    """OpenAI's answer to a chat completion over the model's window (400, ``context_length_exceeded``)."""
    return json_payload_reply(
        {
            "error": {
                "message": f"This model's maximum context length is {limit} tokens. However, your messages "
                f"resulted in {counted} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        status=400,
    )


def gemini_context_exceeded(limit: int, counted: int) -> Reply:
    """Gemini's answer to a request over the model's input limit (400 ``INVALID_ARGUMENT``)."""
    return json_payload_reply(
        {
            "error": {
                "code": 400,
                "message": f"The input token count ({counted}) exceeds the maximum number of tokens allowed ({limit}).",
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )


def with_input_tokens(reply: Reply, counted: int) -> Reply:
    """``reply`` reporting ``counted`` input tokens, when it is a JSON answer with usage."""
    try:
        payload = json.loads(reply.body) if reply.status == 200 and reply.body else None
    except ValueError:
        return reply
    if not isinstance(payload, dict):
        return reply
    if isinstance(payload.get("usage"), dict):
        payload["usage"]["prompt_tokens"] = counted
    elif isinstance(payload.get("usageMetadata"), dict):
        payload["usageMetadata"]["promptTokenCount"] = counted
    else:
        return reply
    return dataclasses.replace(reply, body=json.dumps(payload).encode())
