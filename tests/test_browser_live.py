"""The live page in a real browser (``streamlit run app.py``, Debian's Chromium at 1440×900, the fake LLM server):
a tab already open on a conversation shows a run another process starts there without a reload, and streams it
in growing pieces as one answer below its question; Stop shows at once, and a stopped answer stays marked
stopped after a reload; every message is on the page once, never twice and never gone, as a run starts and ends."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from agent_app.registry import ToolRegistry
from agent_app.storage import SqliteStorage
from agent_app.types import AgentContext, ChatMessage, TokenUsage
from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.replies import Reply
from fake_llm.streams import StreamScript
from tests.browser_support import IDLE, UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot, stop_button
from tests.creator_support import EXACT_PHRASE, hour_transcript, seed_clip
from tests.run_support import finished, manager_for
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]


VIEWPORT = (1440, 900)
WORDS = 60


@pytest.fixture
def server(fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StreamlitServer]:
    env = app_env(fake_llm, tmp_path / "data")
    for name, value in env.items():  # the test's own runs (the "other process") use the same model
        monkeypatch.setenv(name, value)
    with run_streamlit(env, tmp_path) as running:
        yield running


def slow_answer() -> tuple[str, Reply]:
    answer = " ".join(f"word{n}" for n in range(WORDS))
    return answer, streamed(openai_text(answer), StreamScript(pieces=WORDS, delay_seconds=0.1))


def live_texts(page: Page, until: str) -> list[str]:
    """The last bubble's text each time it changed, until it shows ``until`` (or the run ends)."""
    seen: list[str] = []
    bubble = page.get_by_test_id("chatBubble").last
    while not seen or until not in seen[-1]:
        text = bubble.inner_text(timeout=UI_TIMEOUT_MS)
        if not seen or text != seen[-1]:
            seen.append(text)
        if stop_button(page).count() == 0:
            break
        page.wait_for_timeout(50)
    return seen


def test_a_tab_open_on_a_conversation_shows_a_run_another_process_starts_and_streams_it(
    browser: Browser, fake_llm: FakeLLMServer, server: StreamlitServer, tmp_path: Path
) -> None:
    storage = SqliteStorage(tmp_path / "data")
    project = storage.create_project("Harbour")
    chat = storage.create_conversation(project.id, "Harbour questions")
    storage.append_message(chat.id, ChatMessage(role="user", content="First question"))
    usage = TokenUsage(input_tokens=120, output_tokens=30)
    storage.append_message(chat.id, ChatMessage(role="assistant", content="First answer.", usage=usage))
    page = open_page(browser, f"{server.base_url}/?project={project.id}&chat={chat.id}", VIEWPORT)
    expect(page.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("This conversation:")).to_be_visible()  # one quiet line under the last answer
    expect(page.get_by_placeholder("Ask about your media…")).to_be_enabled(timeout=UI_TIMEOUT_MS)

    answer, reply = slow_answer()
    fake_llm.chat.push(reply)
    manager = manager_for(storage, ToolRegistry())  # this test's process: another process than the page's
    run = manager.start(chat.id, AgentContext(project_id=project.id), ChatMessage(role="user", content="Go on"))
    expect(stop_button(page)).to_be_visible(timeout=UI_TIMEOUT_MS)  # no reload
    expect(page.get_by_text("Go on", exact=True)).to_be_visible()
    texts = live_texts(page, f"word{WORDS // 2}")
    growing = [t for t in texts if "word0" in t]
    assert len(growing) >= 3, texts  # streamed in pieces, not at the end
    assert all(len(a) < len(b) for a, b in itertools.pairwise(growing))
    assert page.get_by_test_id("chatBubble").count() == 4  # the question and one live answer below it
    expect(page.get_by_text("This conversation:")).to_have_count(0)  # no lines between question and answer
    screenshot(page, "live-run-from-another-process.png")
    assert finished(manager, run, 60).state == "answered"
    expect(page.get_by_text(answer)).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(stop_button(page)).to_have_count(0)
    manager.close()


COUNT_EVERY_FRAME_JS = """(texts) => {
  const bubbles = () => {  // every bubble, in the page and in the shadow roots of its elements
    const found = [];
    const visit = (root) => {
      root.querySelectorAll('[data-testid="chatBubble"]').forEach((bubble) => found.push(bubble));
      root.querySelectorAll("*").forEach((node) => { if (node.shadowRoot) { visit(node.shadowRoot); } });
    };
    visit(document);
    return found;
  };
  window.__counts = Object.fromEntries(texts.map((text) => [text, []]));
  const frame = () => {
    const shown = bubbles().filter((bubble) => bubble.isConnected && bubble.getClientRects().length > 0);
    for (const text of texts) {
      const count = shown.filter((bubble) => bubble.textContent.includes(text)).length;
      const seen = window.__counts[text];
      if (seen.length === 0 || seen[seen.length - 1] !== count) { seen.push(count); }
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""
"""Records, frame by frame, in how many drawn bubbles each text is: ``window.__counts[text]`` is the list of
counts, each kept when it changed."""


def test_every_message_is_drawn_once_as_a_run_starts_streams_and_ends(
    browser: Browser, fake_llm: FakeLLMServer, server: StreamlitServer, tmp_path: Path
) -> None:
    project_id, _ = seed_clip(tmp_path / "data", tmp_path, hour_transcript())  # the page beside the chat is full
    storage = SqliteStorage(tmp_path / "data")
    chat = storage.create_conversation(project_id, "Harbour questions")
    storage.append_message(chat.id, ChatMessage(role="user", content="First question"))
    storage.append_message(chat.id, ChatMessage(role="assistant", content="First answer."))
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={chat.id}", VIEWPORT)
    expect(page.get_by_text(EXACT_PHRASE)).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("First answer.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    answer, reply = slow_answer()
    fake_llm.chat.push(reply)
    texts = ["First question", "First answer.", "Second question", "word0", answer]
    page.evaluate(COUNT_EVERY_FRAME_JS, texts)
    ask(page, "Second question")
    expect(page.get_by_text(f"word{WORDS // 2}", exact=False)).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(stop_button(page)).to_have_count(0, timeout=UI_TIMEOUT_MS)  # the run is over
    expect(page.locator(IDLE)).to_be_attached(timeout=UI_TIMEOUT_MS)
    page.wait_for_timeout(1_000)  # a last redraw, had one been coming
    counts = page.evaluate("window.__counts")
    assert counts["First question"] == [1] and counts["First answer."] == [1], counts  # never twice, never gone
    assert counts["Second question"] == [0, 1], counts
    assert counts["word0"] == [0, 1], counts  # the live answer becomes the stored one in place
    assert counts[answer] == [0, 1], counts


def test_stop_shows_at_once_and_a_stopped_answer_stays_marked_stopped_after_a_reload(
    browser: Browser, fake_llm: FakeLLMServer, server: StreamlitServer
) -> None:
    _, reply = slow_answer()
    fake_llm.chat.push(reply)
    page = open_page(browser, server.base_url, VIEWPORT)
    ask(page, "Tell me slowly")
    expect(page.get_by_text("word2", exact=False)).to_be_visible(timeout=UI_TIMEOUT_MS)
    stop_button(page).click()
    expect(page.get_by_text("Stopping…").or_(page.get_by_text("Stopped."))).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("Stopped.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.reload()
    expect(page.get_by_text("Stopped.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("word1", exact=False)).to_be_visible()  # the answer so far, kept
