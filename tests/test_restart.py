"""Messages survive a server restart: written through to SQLite as they are appended, read back by a
new ``streamlit run app.py`` process on the same data directory."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, expect

from fake_llm import FakeLLMServer, openai_text
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

QUESTION = "Remember: the harbour scene comes first."
ANSWER = "Noted: the harbour scene comes first."


def test_conversation_survives_a_server_restart(browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    env = app_env(fake_llm, tmp_path / "data")
    fake_llm.chat.push(openai_text(ANSWER))
    with run_streamlit(env, tmp_path) as first:
        page = open_page(browser, first.base_url)
        ask(page, QUESTION)
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
        query = urlsplit(page.url).query
        first_pid = first.process.pid
    assert first.process.returncode is not None  # stopped, by its pid

    with run_streamlit(env, tmp_path) as second:
        assert second.process.pid != first_pid
        page.goto(f"{second.base_url}/?{query}")
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text(QUESTION).first).to_be_visible()
        screenshot(page, "after-restart.png")
    assert len(fake_llm.chat.requests) == 1  # reopening asked the model nothing
