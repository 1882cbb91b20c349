"""Switching conversation on a busy server shows the conversation the list names, every time.

With Streamlit's ``run_every`` the idle watch asked for its rerun while a switch was still being sent; when
the request landed as the switch's script ended, Streamlit dropped the rest of the switch's messages and the
chat kept the old conversation under the new one's entry (see :mod:`agent_app.ui.refresh_timer`). A few busy
threads in the server (``testsupport/busy_server``), started once the page is open, make the server's threads
take turns as real work does. That loss needs one request to land in a window of milliseconds, so the test
also records every rerun request the page sends (a BackMsg's ``rerun_script``, field 11) with the page's
script state: none that no click or key caused may be sent while the page runs, or sooner after it ran than
the timer's settling time (between a callback's run and its keyed rerun the page shows idle for a moment), or
while a click's request is on its way (the page shows idle until its run starts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from agent_app.ui.refresh_timer import SETTLE_MS
from fake_llm import FakeLLMServer
from tests.browser_support import IDLE, UI_TIMEOUT_MS, app_env, browser, screenshot
from testsupport.streamlit_server import ROOT, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

SWITCHES = 30
BUSY_THREADS = 3
TITLES = ("First chat", "Second chat")


RECORD_SENDS = """
window.sentReruns = [];
let lastInput = -1e9;  // the last click or key
let lastChange = -1e9;  // the last change of Streamlit's script state in the page
let lastDraw = -1e9;  // the last change of anything in the page
new MutationObserver((records) => {
  const now = performance.now();
  lastDraw = now;
  if (records.some((record) => record.attributeName === "data-test-script-state")) { lastChange = now; }
}).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
for (const type of ["pointerdown", "click", "keydown"]) {
  window.addEventListener(type, () => { lastInput = performance.now(); }, true);
}
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
    : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null;
  if (bytes && bytes[0] === ((11 << 3) | 2)) {  // BackMsg.rerun_script, length-delimited
    const app = document.querySelector('[data-testid="stApp"]');
    const now = performance.now();
    window.sentReruns.push({
      state: app ? app.dataset.testScriptState : "",
      sinceInput: now - lastInput,
      sinceChange: now - lastChange,
      drawnAt: lastDraw,
    });
  }
  return send.call(this, data);
};
"""
"""Our own recorder of the rerun requests the page sends, installed before Streamlit's script runs."""
TIMER_SLACK_MS = 10
"""Two observers of the same change may see it a task apart."""
INPUT_MS = 200
"""A request this soon after a click or a key is the user's, sent whatever the page is doing."""
TIMED_SENT = "(inputMs) => window.sentReruns.some((request) => request.sinceInput > inputMs)"


def _seed(data_dir: Path) -> str:
    """A project with two conversations of a few turns each; the address opening the first."""
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Busy")
    ids = []
    for title in reversed(TITLES):
        chat = storage.create_conversation(project.id, title)
        for turn in range(4):
            storage.append_message(chat.id, ChatMessage(role="user", content=f"Question {turn} of {title}?"))
            storage.append_message(chat.id, ChatMessage(role="assistant", content=f"Answer {turn} of {title}."))
        storage.append_message(chat.id, ChatMessage(role="assistant", content=f"Last answer in {title}"))
        ids.append(chat.id)
    storage.close()
    return f"?project={project.id}&chat={ids[-1]}"


def test_every_switch_on_a_busy_server_shows_the_conversation_the_list_names(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    query = _seed(tmp_path / "data")
    env = app_env(fake_llm, tmp_path / "data") | {
        "PYTHONPATH": str(ROOT / "testsupport" / "busy_server"),
        "AGENT_TEST_BUSY_THREADS": str(BUSY_THREADS),
        "AGENT_TEST_BUSY_AFTER": str(tmp_path / "busy"),
    }
    with run_streamlit(env, tmp_path) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.add_init_script(RECORD_SENDS)
        page.goto(f"{server.base_url}/{query}")
        expect(page.get_by_text(f"Last answer in {TITLES[0]}", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.locator(IDLE)).to_be_attached(timeout=UI_TIMEOUT_MS)
        page.evaluate("() => { window.sentReruns = []; }")  # the page's first run asked before it was idle
        (tmp_path / "busy").touch()  # from here on the server's threads take turns with busy ones
        for switch in range(SWITCHES):
            title = TITLES[(switch + 1) % 2]
            page.get_by_role("button", name=f"{title} —").click()
            try:
                expect(page.get_by_text(f"Last answer in {title}", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
                expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
            except AssertionError:
                screenshot(page, "refresh-race.png")
                raise AssertionError(f"switch {switch + 1} of {SWITCHES} to {title!r} never showed it") from None
        # The watch's own refreshes are recorded too (during the switches a click may always come first).
        page.wait_for_function(TIMED_SENT, arg=INPUT_MS, timeout=UI_TIMEOUT_MS)
        sent = page.evaluate("() => window.sentReruns")
    timed = [request for request in sent if request["sinceInput"] > INPUT_MS]
    assert [request for request in timed if request["state"] != "notRunning"] == [], sent
    assert [request for request in timed if request["sinceChange"] < SETTLE_MS - TIMER_SLACK_MS] == [], sent
    # Nor after a click's request before anything of its run arrived (nothing drawn since that request).
    clicked_at_draws: set[float] = set()
    for request in sent:  # in the order sent
        if request["sinceInput"] <= INPUT_MS:
            clicked_at_draws.add(request["drawnAt"])
        else:
            assert request["drawnAt"] not in clicked_at_draws, (request, sent)
