"""Messages survive a server restart: written through to SQLite as they are appended, read back by a
new ``streamlit run app.py`` process on the same data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.app_server import start_app
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot
from tests.fake_llm import FakeLLMServer, openai_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]


def test_conversation_survives_a_server_restart(browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    env = app_env(fake_llm, tmp_path / "data")
    fake_llm.chat.push(openai_text("Noted: the harbour scene comes first."))
    first = start_app(env, tmp_path / "first.log")
    try:
        page = open_page(browser, first.url)
        ask(page, "Remember: the harbour scene comes first.")
        expect(page.get_by_text("Noted: the harbour scene comes first.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        url = page.url
    finally:
        first.stop()
    assert first.process.returncode is not None

    second = start_app(env, tmp_path / "second.log", port=first.port)
    try:
        assert second.process.pid != first.process.pid
        page.goto(url)
        expect(page.get_by_text("Noted: the harbour scene comes first.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("Remember: the harbour scene comes first.").first).to_be_visible()
        screenshot(page, "after-restart.png")
    finally:
        second.stop()
    assert len(fake_llm.chat.requests) == 1  # restoring asked the model nothing
