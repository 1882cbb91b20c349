"""Helpers for the page tests: an AppTest of the real page script against the fake LLM server,
and readers that turn the element tree into plain strings to assert on."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parent.parent
PAGE_SCRIPT = ROOT / "agent_app" / "ui" / "page_script.py"
LLM_SETTINGS = ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY", "LLM_BASE_URL")
RUN_TIMEOUT = 60.0
SETTLE_TIMEOUT = 60.0
STOP_KEY = "chat_stop"

_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    """What a reader sees of Markdown source: backslash escapes of punctuation show as the character."""
    return _MARKDOWN_ESCAPE.sub(r"\1", markdown)


def configure_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path, fake_llm: FakeLLMServer | None) -> None:
    """Point the app at ``data_dir`` and, when given, at the fake server (no retries: failures are
    meant to show at once)."""
    monkeypatch.setenv("AGENT_DATA_DIR", str(data_dir))
    for name in LLM_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    if fake_llm is not None:
        monkeypatch.setenv("LLM_PROVIDER", "openai-compatible")
        monkeypatch.setenv("LLM_BASE_URL", fake_llm.openai_base_url)
        monkeypatch.setenv("LLM_MODEL", "fake-model")
        monkeypatch.setenv("LLM_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")


def new_page(query_params: dict[str, str] | None = None) -> AppTest:
    """A fresh browser session of the page (optionally opened at a URL's query parameters), run once."""
    at = AppTest.from_file(str(PAGE_SCRIPT), default_timeout=RUN_TIMEOUT)
    if query_params:
        at.query_params.update(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run_going(at: AppTest) -> bool:
    """Whether the page shows a run in progress (its Stop button)."""
    return any(button.key == STOP_KEY for button in at.main.button)


def settle(at: AppTest) -> AppTest:
    """Rerun the page until the run it shows is over, as the chat's refreshing fragment does in a browser."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while run_going(at):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def send(at: AppTest, text: str) -> AppTest:
    """Type ``text`` into the chat input, submit it, and wait for the run it starts to end."""
    at.chat_input(key="chat_prompt").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return settle(at)


def click(at: AppTest, key: str) -> AppTest:
    """Click the button ``key`` and wait for a run it starts (Retry) to end."""
    at.button(key=key).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return settle(at)


def bubbles(at: AppTest) -> list[tuple[str, str]]:
    """Each chat bubble as ``(role, its markdown joined)``, the tool cards' insides left out."""
    result = []
    for message in at.main.chat_message:
        in_cards = {id(markdown.proto) for card in message.expander for markdown in card.markdown}
        parts = [shown(str(m.value)) for m in message.markdown if id(m.proto) not in in_cards]
        result.append((message.name, "\n".join(parts)))
    return result


def card_labels(at: AppTest) -> list[str]:
    """The labels of the tool cards (expanders inside chat bubbles), as shown."""
    return [shown(expander.label) for message in at.main.chat_message for expander in message.expander]


def texts(elements: object) -> list[str]:
    """``.value`` of each element of an element list, as shown (Markdown escapes removed)."""
    return [shown(str(element.value)) for element in elements]  # type: ignore[attr-defined]
