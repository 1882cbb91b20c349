"""The page as a creator uses it, in a real browser (Debian's chromium) at a desktop and a phone size:
search in an hour-long transcript, an exact seek from a hit, the transcript following the playing video."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from fake_llm import FakeLLMServer, openai_text
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot
from tests.creator_support import EXACT_PHRASE, EXACT_START_MS, LATE_INDEX, LATE_PHRASE, hour_transcript, seed_clip
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the fixture, imported for this module

DESKTOP = (1440, 900)
PHONE = (390, 844)


def test_search_finds_a_phrase_in_an_hour_long_transcript_and_seeks_exactly(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    project_id, asset = seed_clip(data_dir, tmp_path, hour_transcript())
    with run_streamlit(app_env(fake_llm, data_dir), tmp_path) as server:
        page = open_page(browser, f"{server.base_url}/?project={project_id}", DESKTOP)
        video = page.locator("video")
        expect(video).to_have_count(1, timeout=UI_TIMEOUT_MS)  # the player draws after the chat
        assert (video.get_attribute("src") or "").endswith(f"/api/media/{asset.id}")
        page.wait_for_function("el => el.readyState >= 1", arg=video.element_handle())
        expect(page.get_by_text("900 segments", exact=False)).to_be_visible()

        search = page.get_by_placeholder("Words said in the clip")
        search.fill(LATE_PHRASE.upper())
        search.press("Enter")
        expect(page.get_by_text("1 segment matches")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("Later we filmed")).to_be_visible()
        expect(page.get_by_text(f"Segment {LATE_INDEX + 1}:")).to_have_count(0)  # only the hit is listed
        screenshot(page, "transcript-search-desktop.png")

        search.fill("lighthouse lamp")
        search.press("Enter")
        expect(page.get_by_text("1 segment matches")).to_be_visible(timeout=UI_TIMEOUT_MS)
        page.evaluate("el => { el.muted = true; }", video.element_handle())
        page.get_by_role("button", name="0:08", exact=True).click()
        # The seek plays: the video plays on from exactly the segment's start (its first played stretch).
        page.wait_for_function(
            f"el => !el.paused && el.played.length && Math.abs(el.played.start(0) - {EXACT_START_MS / 1000}) < 0.02",
            arg=video.element_handle(),
        )
        page.evaluate("el => el.pause()", video.element_handle())
        expect(page.locator(".segment", has_text=EXACT_PHRASE)).to_have_count(1)

        # Played by the user, the video reports where it is: the segment under it is marked.
        search.fill("")
        search.press("Enter")
        page.evaluate("el => { el.muted = true; el.currentTime = 4.5; return el.play(); }", video.element_handle())
        expect(page.locator(".segment", has=page.get_by_role("button", name="0:04", exact=True))).to_have_attribute(
            "aria-current", "true", timeout=UI_TIMEOUT_MS
        )
        page.evaluate("el => el.pause()", video.element_handle())


def test_the_transcript_pages_by_stretches_of_the_clip_on_a_phone(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    project_id, _ = seed_clip(data_dir, tmp_path, hour_transcript())
    with run_streamlit(app_env(fake_llm, data_dir), tmp_path) as server:
        page = open_page(browser, f"{server.base_url}/?project={project_id}", PHONE)
        expect(page.get_by_text("Segment 24:")).to_be_visible(timeout=UI_TIMEOUT_MS)
        page.get_by_role("button", name="Later").click()
        expect(page.get_by_text("Segment 25:")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("Segment 24:")).to_have_count(0)
        screenshot(page, "transcript-pages-phone.png")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_the_chat_input_is_on_screen_without_scrolling(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path, viewport: tuple[int, int]
) -> None:
    data_dir = tmp_path / "data"
    project_id, _ = seed_clip(data_dir, tmp_path, hour_transcript())
    with run_streamlit(app_env(fake_llm, data_dir), tmp_path) as server:
        page = open_page(browser, f"{server.base_url}/?project={project_id}", viewport)
        box = page.get_by_test_id("stChatInput")
        expect(box).to_be_visible(timeout=UI_TIMEOUT_MS)
        page.wait_for_timeout(500)  # the layout settles (fonts, the player's size)
        bounds = box.bounding_box()
        shot = screenshot(page, f"chat-input-{viewport[0]}x{viewport[1]}.png")
        assert bounds is not None, shot
        assert bounds["y"] >= 0 and bounds["y"] + bounds["height"] <= viewport[1], (bounds, shot)
        assert bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= viewport[0], (bounds, shot)
        scrolled = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")
        assert scrolled == 0


def test_a_multi_line_message_keeps_its_lines_and_edit_and_resend_replaces_the_turn(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm.chat.push(openai_text("First answer."), openai_text("Answer to the edited question."))
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url, PHONE)
        ask(page, "# Shots to check\nintro at $5\n  - the pier")
        expect(page.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        user = page.get_by_test_id("chatBubble").first
        shown = user.locator(".typed").inner_text()
        assert shown.splitlines() == ["# Shots to check", "intro at $5", "  - the pier"]
        expect(user.locator("h1")).to_have_count(0)
        screenshot(page, "multi-line-phone.png")

        page.get_by_role("button", name="Edit").click()
        editor = page.get_by_test_id("stTextArea").locator("textarea")
        expect(editor).to_have_value("# Shots to check\nintro at $5\n  - the pier", timeout=UI_TIMEOUT_MS)
        editor.fill("Only the pier, please")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.get_by_text("Answer to the edited question.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("First answer.")).to_have_count(0)
        expect(page.get_by_text("Shots to check")).to_have_count(0)
        screenshot(page, "edited-phone.png")
    sent = [m["content"] for m in fake_llm.chat.last.json["messages"] if m["role"] == "user"]
    assert sent == ["Only the pier, please"]
