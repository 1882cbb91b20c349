"""The chat follows the newest message in a real browser (Debian's chromium at 1440×900): after a tool card is
expanded, the next question's status and answer show inside the chat box; a user who scrolled up to read is
not pulled down when an answer arrives."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, ToolCall, ToolResult
from agent_app.ui.layout_css import CHAT_HISTORY_KEY
from fake_llm import FakeLLMServer, delayed, openai_text
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot, stop_button
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

DESKTOP = (1440, 900)
HISTORY = f".st-key-{CHAT_HISTORY_KEY}"
NEWEST_IN_VIEW = f"""() => {{
  const box = document.querySelector('{HISTORY}');
  const messages = [...box.querySelectorAll('*')].flatMap(
    (node) => node.shadowRoot ? [...node.shadowRoot.querySelectorAll('[data-testid="chatBubble"]')] : []);
  const newest = messages[messages.length - 1].getBoundingClientRect();
  const view = box.getBoundingClientRect();
  return newest.bottom <= view.bottom + 2 && newest.bottom > view.top;
}}"""
"""Whether the end of the chat's last message is inside the chat box's visible area."""
SCROLL_STATE = (
    f"() => {{ const b = document.querySelector('{HISTORY}'); return [b.scrollTop, b.scrollHeight, b.clientHeight]; }}"
)
SCROLL_TOP = f"() => document.querySelector('{HISTORY}').scrollTop"


def seed_long_chat(data_dir: Path) -> tuple[str, str]:
    """A conversation longer than the chat box, with a tool card above the last turns: (project id, chat id)."""
    storage = SqliteStorage(data_dir)
    try:
        project = storage.create_project("Harbour")
        chat = storage.create_conversation(project.id, "Harbour questions")
        call = ToolCall(id="call_1", name="transcribe_video", args={"assetId": "a1"})
        segments = [{"startMs": i * 1000, "text": f"segment {i} of the clip"} for i in range(25)]
        result = ToolResult(
            tool_call_id="call_1", name="transcribe_video", result={"segments": segments}, duration_ms=11
        )
        storage.append_message(chat.id, ChatMessage(role="user", content="Transcribe the clip"))
        storage.append_message(chat.id, ChatMessage(role="assistant", tool_calls=[call]))
        storage.append_message(chat.id, ChatMessage(role="tool", content="transcribed", tool_result=result))
        storage.append_message(chat.id, ChatMessage(role="assistant", content="The clip is transcribed."))
        for turn in range(3):
            storage.append_message(chat.id, ChatMessage(role="user", content=f"Question {turn}"))
            lines = "\n\n".join(f"Line {line} of answer {turn}." for line in range(8))
            storage.append_message(chat.id, ChatMessage(role="assistant", content=lines))
    finally:
        storage.close()
    return project.id, chat.id


def newest_in_view(page: Page) -> None:
    try:
        page.wait_for_function(NEWEST_IN_VIEW, timeout=5_000)
    except PlaywrightTimeoutError:
        shot = screenshot(page, "chat-newest-not-in-view.png")
        raise AssertionError(f"newest message out of view: {page.evaluate(SCROLL_STATE)}, see {shot}") from None


def test_the_chat_follows_the_newest_message_unless_the_user_scrolled_up_to_read(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    project_id, chat_id = seed_long_chat(data_dir)
    fake_llm.chat.push(delayed(openai_text("Answer to the next question."), 2.0))
    fake_llm.chat.push(delayed(openai_text("Answer while reading."), 6.0))
    with run_streamlit(app_env(fake_llm, data_dir), tmp_path) as server:
        page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={chat_id}", DESKTOP)
        expect(page.get_by_text("Line 7 of answer 2.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        newest_in_view(page)
        card = page.locator("details.card > summary").last
        card.scroll_into_view_if_needed()  # the user goes up to the tool card and opens it
        card.click()
        expect(page.get_by_text("segment 24 of the clip")).to_be_attached(timeout=UI_TIMEOUT_MS)

        ask(page, "And the next question?")
        expect(page.get_by_text("Asking the assistant…")).to_be_attached(timeout=UI_TIMEOUT_MS)
        newest_in_view(page)  # the live status is in the visible part of the chat box
        screenshot(page, "chat-follows-status-1440x900.png")
        expect(stop_button(page)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # the run is over
        expect(page.get_by_text("Answer to the next question.")).to_have_count(1)
        newest_in_view(page)  # and so is its answer

        ask(page, "One more, while I read")
        expect(page.get_by_text("Asking the assistant…")).to_be_attached(timeout=UI_TIMEOUT_MS)
        newest_in_view(page)
        page.wait_for_timeout(3_200)  # the user reads the question sent, then scrolls up
        box = page.locator(HISTORY).bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        for _ in range(5):  # the user scrolls up to read, a few turns of the wheel
            page.mouse.wheel(0, -100)
            page.wait_for_timeout(50)
        page.wait_for_timeout(500)
        reading_at = page.evaluate(SCROLL_TOP)
        assert not page.evaluate(NEWEST_IN_VIEW)  # the user is reading further up
        expect(stop_button(page)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # the answer is in
        expect(page.get_by_text("Answer while reading.")).to_have_count(1)
        page.wait_for_timeout(1_000)  # long enough for any pull to the bottom
        screenshot(page, "chat-not-yanked-1440x900.png")
        assert abs(page.evaluate(SCROLL_TOP) - reading_at) <= 2
        assert not page.evaluate(NEWEST_IN_VIEW)
