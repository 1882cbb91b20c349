"""Tokens of answers and conversations, and their estimated cost when ``LLM_PRICES`` lists the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_app.settings import Prices, Settings, load_settings
from agent_app.types import ChatMessage, TokenUsage
from agent_app.usage_cost import model_prices, total_usage, usage_text
from tests.history_html import classed_texts
from tests.page_support import bubbles, history_elements


def test_usage_sums_only_the_messages_that_carry_one() -> None:
    messages = [
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content="a", usage=TokenUsage(input_tokens=1200, output_tokens=30)),
        ChatMessage(role="assistant", content="b", usage=TokenUsage(input_tokens=34, output_tokens=26)),
        ChatMessage(role="assistant", content="c"),
    ]
    assert total_usage(messages) == TokenUsage(input_tokens=1234, output_tokens=56)
    assert total_usage(messages[:1]) is None
    assert usage_text(TokenUsage(input_tokens=1234, output_tokens=56)) == "1,234 tokens in · 56 out"
    priced = usage_text(TokenUsage(input_tokens=1234, output_tokens=56), Prices(input=0.15, output=0.6))
    assert priced == "1,234 tokens in · 56 out · ≈ $0.0002"
    big = usage_text(TokenUsage(input_tokens=2_000_000, output_tokens=1_000_000), Prices(input=2.5, output=10))
    assert big.endswith("≈ $15.00")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ('{"fake-model": {"input": 0.15, "output": 0.6}}', Prices(0.15, 0.6)),
        ('{"fake-model": {"input": "1", "output": 2}}', Prices(1.0, 2.0)),
        ('{"other-model": {"input": 1, "output": 2}}', None),
        ('{"fake-model": {"input": -1, "output": 2}}', None),
        ('{"fake-model": {"input": 1}}', None),
        ("not json", None),
        ("[1, 2]", None),
    ],
)
def test_prices_come_from_llm_prices_for_the_configured_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str, expected: Prices | None
) -> None:
    monkeypatch.chdir(tmp_path)  # no secrets file
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_PRICES", setting)
    settings = load_settings()
    assert model_prices(settings) == expected
    if expected is None and "other-model" not in setting:
        assert settings.problems_with("LLM_PRICES")  # named as unusable; the page still shows tokens


def test_prices_from_a_secrets_table() -> None:
    table = {"LLM_MODEL": "m", "LLM_PRICES": {"m": {"input": 2.5, "output": 10}}}  # as TOML hands it over
    assert model_prices(Settings.model_validate(table)) == Prices(2.5, 10.0)


def _history() -> None:
    import streamlit as st

    from agent_app.types import ChatMessage, TokenUsage, ToolCall, ToolResult
    from agent_app.ui.chat_history import ANSWER_KEY, answer_start, footer_bubbles, render_history
    from agent_app.ui.history_element import render_bubbles

    call = ToolCall(id="call_1", name="echo_context", args={})
    messages = [
        ChatMessage(role="user", content="What is in the project?"),
        ChatMessage(role="assistant", tool_calls=[call], usage=TokenUsage(input_tokens=100, output_tokens=20)),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="call_1", name="echo_context", result={})),
        ChatMessage(role="assistant", content="One video.", usage=TokenUsage(input_tokens=150, output_tokens=30)),
        ChatMessage(role="user", content="Thanks"),
        ChatMessage(role="assistant", content="Welcome.", usage=TokenUsage(input_tokens=10, output_tokens=5)),
    ]
    answer_from = answer_start(st.session_state, "c1", messages)  # after the last question, as a tab opens it
    answer = render_history(st.session_state, messages, answer_from, st.session_state["prices"])
    footer = footer_bubbles(messages, answer.context, st.session_state["prices"])
    render_bubbles([*answer.bubbles, *footer], key=ANSWER_KEY)  # the last answer, as the chat's answer part draws it


@pytest.mark.parametrize("priced", [False, True])
def test_each_answer_shows_its_tokens_and_the_conversation_its_total(priced: bool) -> None:
    at = AppTest.from_function(_history)
    at.session_state["prices"] = Prices(input=1.0, output=2.0) if priced else None
    at.run()
    assert not at.exception
    drawn = [str(bubble["html"]) for bubble in history_elements(at)]
    assistant = [html for html in drawn if 'data-role="assistant"' in html]
    answers = [classed_texts(html, "quiet")[-1] for html in assistant]  # a quiet line under each answer
    total = [line for html in drawn for line in classed_texts(html, "quiet") if line.startswith("This conversation")]
    assert [role for role, _ in bubbles(at)] == ["user", "assistant", "user", "assistant"] and len(assistant) == 2
    if priced:
        assert answers == ["250 tokens in · 50 out · ≈ $0.0003", "10 tokens in · 5 out · < $0.0001"]
        assert total == ["This conversation: 260 tokens in · 55 out · ≈ $0.0004"]
    else:
        assert answers == ["250 tokens in · 50 out", "10 tokens in · 5 out"]
        assert total == ["This conversation: 260 tokens in · 55 out"]
