"""Property: any history the route accepts is sent as a request the provider accepts.

Hypothesis builds well-formed conversations with hostile contents (empty and whitespace texts, odd ids,
unicode, nested arguments, results of every JSON type, system messages anywhere, provider metadata from
the other provider) and sends them through the route, the real adapter and SDK to the fake server. The
recorded wire body is then checked against the rules the real providers enforce.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_llm import FakeLLMServer, gemini_text, openai_text
from tests.chat_support import post_chat

FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

_text = st.text(max_size=20) | st.sampled_from(["", " ", "\n", "\u2028", "\x00", "é" * 3])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3),
    max_leaves=8,
)

_question = st.text(min_size=1, max_size=20).filter(str.strip)
_user_text = st.one_of(_question, _question, _question, st.sampled_from(["", " ", "\n"]))
_id = st.text(min_size=1, max_size=60) | st.sampled_from(["call_0", "chatcmpl-tool-" + "a" * 32, "1"])


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(_user_text)}]
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["user", "system", "answer", "tools"]))
        if kind in ("user", "system"):
            messages.append({"role": kind, "content": draw(_user_text if kind == "user" else _text)})
        elif kind == "answer":
            messages.append({"role": "assistant", "content": draw(_text)})
        else:
            ids = draw(st.lists(_id, min_size=1, max_size=3, unique=True))
            names = [draw(st.sampled_from(["transcribe_video", "other_tool"])) for _ in ids]
            calls = [
                {"id": i, "name": n, "args": draw(st.dictionaries(_text, _json, max_size=3))}
                for i, n in zip(ids, names, strict=True)
            ]
            messages.append({"role": "assistant", "content": draw(_text), "toolCalls": calls})
            for call in draw(st.permutations(calls)):
                outcome = draw(st.sampled_from(["result", "error"]))
                result: dict[str, Any] = {"toolCallId": call["id"], "name": call["name"]}
                result.update({"result": draw(_json)} if outcome == "result" else {"error": draw(_text)})
                messages.append({"role": "tool", "content": draw(_text), "toolResult": result})
    messages.append({"role": "user", "content": draw(_user_text)})
    return messages


def _check_openai_wire(body: dict[str, Any]) -> None:
    open_ids: set[str] = set()
    for message in body["messages"]:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_ids, message
            open_ids.remove(message["tool_call_id"])
            continue
        assert not open_ids, "a tool call was left unanswered"
        for call in message.get("tool_calls", []):
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", call["id"]), call["id"]
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            open_ids.add(call["id"])
        if message["role"] == "assistant" and "tool_calls" not in message:
            assert isinstance(message["content"], str)
    assert not open_ids


def _check_gemini_wire(body: dict[str, Any]) -> None:
    contents = body["contents"]
    assert contents and contents[0]["role"] == "user"
    calls_before: list[str] = []
    for content in contents:
        parts = content["parts"]
        assert parts, "an empty content"
        for part in parts:
            if "text" in part:
                assert part["text"].strip(), "Gemini rejects an empty text part"
        responses = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
        if content["role"] == "user":
            assert sorted(responses) == sorted(calls_before), "responses must answer the previous turn's calls"
        calls_before = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    assert calls_before == []


def _blank_question(messages: list[dict[str, Any]]) -> bool:
    return any(m["role"] == "user" and not m["content"].strip() for m in messages)


@FUZZ
@given(messages=conversations())
def test_accepted_histories_reach_openai_in_a_valid_shape(openai_llm: FakeLLMServer, messages: list[Any]) -> None:
    openai_llm.chat.default = openai_text("ok")
    result = post_chat(json.dumps({"messages": messages}).encode())
    if _blank_question(messages):
        assert result.status == 400 and "must not be empty" in result.body["error"]
        return
    assert result.status == 200, result.body
    _check_openai_wire(openai_llm.chat.last.json)


@FUZZ
@given(messages=conversations())
def test_accepted_histories_reach_gemini_in_a_valid_shape(gemini_llm: FakeLLMServer, messages: list[Any]) -> None:
    gemini_llm.gemini.default = gemini_text("ok")
    result = post_chat(json.dumps({"messages": messages}).encode())
    if _blank_question(messages):
        assert result.status == 400 and "must not be empty" in result.body["error"]
        return
    assert result.status == 200, result.body
    _check_gemini_wire(gemini_llm.gemini.last.json)
