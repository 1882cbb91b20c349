"""A stale tab cannot replace a turn while another tab's run goes (issue 24): tab A sends a question whose
answer streams slowly; tabs drawn before it (not redrawn since, so they still offer Regenerate, Edit and
an enabled input) are refused with the busy message, and storage keeps every message and the title. What
the refused tab had typed stays where it was typed (the editor, the chat input), as does a question sent in
the tab whose run goes.

An open tab now redraws within a fraction of a second when a run starts elsewhere (issue 20), so the stale
tabs are held stale: the server's messages to them wait (Playwright's WebSocket route) while their clicks go
through, as on a slow link, then arrive in order."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, WebSocketRoute, expect

from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.streams import StreamScript
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot, send_typed, stop_button
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]


SLOW_ANSWER = " ".join(f"word{i}" for i in range(600))
SLOW = StreamScript(pieces=600, delay_seconds=0.4)
"""Four minutes of streaming, ended by Stop once the stale tabs have acted: they act while it goes however
slow the machine is."""
BUSY = "The assistant is still answering in this conversation"
FIRST = [("user", "First question"), ("assistant", "First answer.")]


def stored(data: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """Every message (role, text) in order, and every conversation title, as the database has them."""
    database = sqlite3.connect(data / "agent.sqlite3")
    try:
        messages = database.execute("SELECT role, json_extract(body, '$.content') FROM messages ORDER BY seq")
        titles = database.execute("SELECT title FROM conversations")
        return [(str(r), str(c)) for r, c in messages], [str(t) for (t,) in titles]
    finally:
        database.close()


def send_in_box(tab: Page, text: str) -> Locator:
    """``text`` typed in the chat input and sent (Enter); the box."""
    box = tab.get_by_test_id("stChatInputTextArea")
    send_typed(tab, box, text)
    return box


def refused(tab: Page) -> None:
    expect(tab.get_by_text(BUSY)).to_be_visible(timeout=UI_TIMEOUT_MS)


class HeldTab:
    """A tab whose messages from the server can be held (it stays as drawn) while its own still go out."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.holding = False
        self._held: list[str | bytes] = []
        self._socket: WebSocketRoute | None = None
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.route_web_socket(re.compile(r"/_stcore/stream"), self._route)
        self.page.goto(url)
        expect(self.page.get_by_text("Media library", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)

    def _route(self, socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        self._socket = socket

        def to_page(message: str | bytes) -> None:
            if self.holding:
                self._held.append(message)
            else:
                socket.send(message)

        server.on_message(to_page)
        socket.on_message(server.send)

    def release(self) -> None:
        """What the server sent meanwhile, in order; from now on its messages go straight through."""
        assert self._socket is not None
        while self._held:
            self._socket.send(self._held.pop(0))
        self.holding = False


def test_a_stale_tab_is_refused_before_anything_is_deleted_and_keeps_what_was_typed(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    fake_llm.chat.push(openai_text("First answer."), streamed(openai_text(SLOW_ANSWER), SLOW))
    with run_streamlit(app_env(fake_llm, data), tmp_path) as server:
        tab_a = open_page(browser, server.base_url)
        ask(tab_a, "First question")
        expect(tab_a.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        held = [HeldTab(browser, tab_a.url) for _ in range(3)]
        regenerating, editing, typing = (tab.page for tab in held)
        for tab in (regenerating, editing, typing):
            expect(tab.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        editing.get_by_role("button", name="Edit").click()
        editor = editing.get_by_role("textbox", name="Edit your message")
        expect(editor).to_have_value("First question", timeout=UI_TIMEOUT_MS)

        for held_tab in held:
            held_tab.holding = True
        ask(tab_a, "Second question")  # its answer streams slowly; the other tabs are not redrawn
        expect(stop_button(tab_a)).to_be_visible(timeout=UI_TIMEOUT_MS)
        while_running = [*FIRST, ("user", "Second question")]

        regenerating.get_by_role("button", name="Regenerate").click()
        held[0].release()
        refused(regenerating)
        screenshot(regenerating, "stale-tab-regenerate-refused.png")
        assert stored(data) == (while_running, ["First question"])

        editor.fill("First question, edited")
        editing.get_by_role("button", name="Send", exact=True).click()
        held[1].release()
        refused(editing)
        expect(editing.get_by_role("textbox", name="Edit your message")).to_have_value("First question, edited")
        assert stored(data) == (while_running, ["First question"])

        # The third tab's own refresh (its idle conversation's watch, timed by the browser) may have told the
        # server of the run already: the question is refused all the same, by storage, and kept in the box.
        box = send_in_box(typing, "Third question")
        held[2].release()
        refused(typing)
        expect(stop_button(typing)).to_be_visible(timeout=UI_TIMEOUT_MS)  # it shows the run live
        expect(box).to_have_value("Third question", timeout=UI_TIMEOUT_MS)
        assert stored(data) == (while_running, ["First question"])

        own_box = send_in_box(tab_a, "Fourth question")  # the tab whose run goes: refused and kept too
        refused(tab_a)
        expect(own_box).to_have_value("Fourth question", timeout=UI_TIMEOUT_MS)
        assert stored(data) == (while_running, ["First question"])

        stop_button(tab_a).click()
        expect(stop_button(tab_a)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # stored, over
        expect(tab_a.get_by_text(BUSY)).to_have_count(0)
        expect(stop_button(typing)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # the run is over there too
        expect(box).to_have_value("Third question")  # still, to send now
        expect(own_box).to_have_value("Fourth question")
    messages, titles = stored(data)
    assert (messages[:-1], titles) == (while_running, ["First question"])
    role, partial = messages[-1]
    assert role == "assistant" and partial.startswith("word0") and SLOW_ANSWER.startswith(partial.strip())
    assert len(fake_llm.chat.requests) == 2  # no refused start reached the model
