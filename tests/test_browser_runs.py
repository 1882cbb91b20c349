"""Runs on the server, seen in a real browser (``streamlit run app.py``, Debian's Chromium, the fake LLM
server): closing the tab does not touch a run and reopening shows it live then its answer, two tabs see
the same live run, a click during a run applies at once, a tool card opened while the answer streams
stays open, and a server killed with SIGKILL mid-run comes back with the run interrupted, Retry, and
nothing lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from fake_llm import (
    FakeLLMServer,
    delayed,
    held,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
    transcription_reply,
)
from fake_llm.streams import StreamScript
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot, stop_button
from tests.media_samples import make_video
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

ANSWER = "The clip says: welcome to the old harbour."


def upload(page: Page, clip: Path) -> None:
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(clip))
    expect(page.get_by_text(f"Added “{clip.name}”")).to_be_visible(timeout=UI_TIMEOUT_MS)


def test_closing_the_tab_during_a_transcription_keeps_the_run_and_reopening_shows_it_then_its_answer(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    clip = make_video(tmp_path / "harbour.mp4", seconds=3.0)
    transcribed = threading.Event()  # the transcriber answers once both reopened tabs have seen the run live
    fake_llm.transcription.push(
        held(transcription_reply("welcome to the old harbour", segments=[(0.0, 2.5, "welcome")]), transcribed)
    )
    fake_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {})), openai_text(ANSWER))
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        upload(page, clip)
        ask(page, "What is said in the harbour clip?")
        expect(page.get_by_text("Running transcribe_video…")).to_be_visible(timeout=UI_TIMEOUT_MS)
        url = page.url
        page.close()  # the tab goes; the transcription goes on on the server
        time.sleep(3)  # long past the closed session's cleanup, which must not touch the run
        assert len(fake_llm.chat.requests) == 1  # the answer is not in yet: the model waits for the transcript
        assert not fake_llm.transcription.requests[0].closed_by_client  # nothing gave up on the transcription

        reopened = open_page(browser, url)
        second_tab = open_page(browser, url)
        for tab in (reopened, second_tab):  # both show the same live run
            expect(tab.get_by_text("Running transcribe_video…")).to_be_visible(timeout=UI_TIMEOUT_MS)
            expect(stop_button(tab)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(reopened.locator(".progress progress")).to_be_visible(timeout=UI_TIMEOUT_MS)  # the tool's progress
        screenshot(reopened, "run-reopened.png")
        transcribed.set()
        for tab in (reopened, second_tab):
            expect(tab.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
            expect(stop_button(tab)).to_have_count(0)
        expect(reopened.get_by_text("did not finish")).to_have_count(0)
    assert fake_llm.chat.last.json["messages"][-1]["role"] == "tool"
    assert len(fake_llm.transcription.requests) == 1


def test_a_click_during_a_run_seeks_at_once(browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    clip = make_video(tmp_path / "harbour.mp4", seconds=4.0)
    fake_llm.transcription.push(
        transcription_reply("one two", segments=[(0.0, 1.0, "first words"), (2.0, 3.5, "second words")])
    )
    answered = threading.Event()
    fake_llm.chat.push(held(openai_text("A slow but complete answer."), answered))
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        upload(page, clip)
        page.get_by_role("button", name="Transcribe").click()
        expect(page.get_by_text("second words")).to_be_visible(timeout=UI_TIMEOUT_MS)
        ask(page, "Take your time")
        expect(page.get_by_text("Asking the assistant…")).to_be_visible(timeout=UI_TIMEOUT_MS)
        second_segment = page.get_by_role("button", name="0:02", exact=True)
        expect(second_segment).to_have_count(1, timeout=UI_TIMEOUT_MS)  # the page has settled
        second_segment.click()  # while the model works
        expect(page.get_by_label("Playhead (seconds, of 0:04)", exact=True)).to_have_value("2.0", timeout=8_000)
        expect(page.get_by_text("A slow but complete answer.")).to_have_count(0)  # still running
        answered.set()
        expect(page.get_by_text("A slow but complete answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    assert len(fake_llm.chat.requests) == 1


def test_a_server_killed_mid_run_restarts_to_an_interrupted_run_with_retry_and_nothing_lost(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    env = app_env(fake_llm, data)
    fake_llm.chat.push(openai_text("First answer."), delayed(openai_text("Never delivered."), 60.0))
    with run_streamlit(env, tmp_path) as first:
        page = open_page(browser, first.base_url)
        ask(page, "First question")
        expect(page.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        ask(page, "Second question, cut short")
        expect(page.get_by_text("Asking the assistant…")).to_be_visible(timeout=UI_TIMEOUT_MS)
        query = urlsplit(page.url).query
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(timeout=10)
    assert first.process.returncode == -signal.SIGKILL

    fake_llm.chat.push(openai_text("Second answer, after Retry."))
    with run_streamlit(env, tmp_path) as second:
        page.goto(f"{second.base_url}/?{query}")
        # The dead server's run is live until its lease runs out (15 s with the default busy timeout), then
        # interrupted, with Retry.
        expect(page.get_by_text("did not finish")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("Second question, cut short").first).to_be_visible()
        expect(page.get_by_text("First answer.")).to_be_visible()
        screenshot(page, "run-interrupted.png")
        page.get_by_role("button", name="Retry").click()
        expect(page.get_by_text("Second answer, after Retry.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        assert second.process.pid != first.process.pid
    sent = [(m["role"], m["content"]) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [
        ("user", "First question"),
        ("assistant", "First answer."),
        ("user", "Second question, cut short"),
    ]
    database = sqlite3.connect(data / "agent.sqlite3")
    try:
        assert database.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        states = [row[0] for row in database.execute("SELECT state FROM runs ORDER BY created_at")]
        assert states == ["answered", "interrupted", "answered"]
    finally:
        database.close()


def test_a_tool_card_opened_while_the_answer_streams_stays_open_as_text_arrives_and_once_it_is_stored(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    clip = make_video(tmp_path / "harbour.mp4", seconds=2.0)
    fake_llm.transcription.push(transcription_reply("welcome", segments=[(0.0, 1.5, "welcome aboard")]))
    words = " ".join(f"word{i}" for i in range(60))
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {})),
        streamed(openai_text(words), StreamScript(pieces=60, delay_seconds=0.25)),
    )
    with run_streamlit(app_env(fake_llm, tmp_path / "data"), tmp_path) as server:
        page = open_page(browser, server.base_url)
        upload(page, clip)
        ask(page, "What is said?")
        expect(page.get_by_text("word3", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        # The reader opens the tool step mid-answer with a slow click: the answer redraws between the press
        # and the release, and the summary pressed must still be there to take the click.
        summary = page.locator("details.card > summary").first.bounding_box()
        assert summary is not None
        page.mouse.move(summary["x"] + summary["width"] / 2, summary["y"] + summary["height"] / 2)
        page.mouse.down()
        expect(page.get_by_text("word9", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        page.mouse.up()
        opened = page.locator("details.card[open]")
        expect(opened).to_have_count(1)
        expect(page.get_by_text("word40", exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(stop_button(page)).to_have_count(1)  # still streaming, redrawn many times since
        expect(opened).to_have_count(1)
        expect(page.get_by_text("welcome aboard", exact=False).first).to_be_visible()
        expect(stop_button(page)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # stored: drawn by the history now
        expect(page.get_by_text("word59", exact=False).first).to_be_visible()
        expect(opened).to_have_count(1)
