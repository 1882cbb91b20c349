"""A headless Chromium (Debian's, driven by Playwright: no browser download) for the browser and restart
tests, and the app environment pointing at the fake LLM server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from fake_llm import FakeLLMServer
from tests.browser_failure_report import BROWSER_OUTPUT, record_page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
UI_TIMEOUT_MS = 30_000
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
"""The page when Streamlit runs no script for it (its own attribute, set in the browser)."""
LOOPBACK = ("127.0.0.1", "localhost")
IN_PAGE = ("data:", "blob:")
"""Addresses made inside the page itself (a component's script is loaded from a ``blob:`` of this origin)."""


def app_env(fake_llm: FakeLLMServer, data_dir: Path) -> dict[str, str]:
    """The subprocess environment: the fake server as the model and as the transcriber, a private data dir."""
    return {
        "AGENT_DATA_DIR": str(data_dir),
        "LLM_PROVIDER": "openai-compatible",
        "LLM_BASE_URL": fake_llm.openai_base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": "test-key-not-secret",
        "LLM_MAX_RETRIES": "0",
        "TRANSCRIBE_BACKEND": "openai",
        "TRANSCRIBE_MODEL": "fake-whisper",
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/test.sh installs Debian's chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def off_host_requests(page: Page) -> list[str]:
    """The URLs ``page`` requested from anywhere but the app's own loopback server (recorded by
    :func:`open_page`): the page must work offline and leak nothing, e.g. through an image in an answer."""
    recorded = getattr(page, "_off_host_requests", None)
    assert isinstance(recorded, list), "open the page with open_page()"
    return recorded


def open_page(browser: Browser, url: str, viewport: tuple[int, int] = (1400, 900)) -> Page:
    """A new tab at ``url``, once the page script has drawn the sidebar; its console and WebSocket frames are
    kept for the report of a failed test (:mod:`tests.browser_failure_report`)."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    off_host: list[str] = []
    page._off_host_requests = off_host  # type: ignore[attr-defined]
    page.on(
        "request",
        lambda request: (
            None
            if urlsplit(request.url).hostname in LOOPBACK or request.url.startswith(IN_PAGE)
            else off_host.append(request.url)
        ),
    )
    record_page(page)
    page.goto(url)
    expect(page.get_by_text("Media library", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
    return page


def stop_button(page: Page) -> Locator:
    """The chat's Stop (not Streamlit's own, in its status widget while a script run takes a while)."""
    return page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop")


def ask(page: Page, text: str) -> None:
    """Send ``text`` once no run this page shows goes (the input stays enabled during a run, and a question
    sent then is refused)."""
    box = page.get_by_placeholder("Ask about your media…")
    expect(box).to_be_enabled(timeout=UI_TIMEOUT_MS)
    expect(stop_button(page)).to_have_count(0, timeout=UI_TIMEOUT_MS)
    send_typed(page, box, text)


def send_typed(page: Page, box: Locator, text: str) -> None:
    """``text`` typed into the chat input ``box`` and sent with Enter once the input has taken it (its Send
    button enabled): an Enter that comes before the input's own state has the text sends nothing."""
    box.fill(text)
    expect(page.get_by_test_id("stChatInputSubmitButton")).to_be_enabled(timeout=UI_TIMEOUT_MS)
    box.press("Enter")


def wait_for_transitions(page: Page) -> None:
    """Wait until no finite CSS transition or animation moves the page (an expander opening, a panel growing):
    a click while one goes on can land on a spot the element has just left, and do nothing."""
    page.wait_for_function(
        "() => document.getAnimations().every(a => a.playState !== 'running'"
        " || a.effect?.getTiming().iterations === Infinity)",
        timeout=UI_TIMEOUT_MS,
    )


def open_expander(page: Page, label: str) -> None:
    """Open the expander titled ``label`` and wait until it has stopped growing, so what the test does next
    inside it lands (see :func:`wait_for_transitions`)."""
    page.get_by_text(label).click()
    wait_for_transitions(page)


def screenshot(page: Page, name: str) -> Path:
    BROWSER_OUTPUT.mkdir(parents=True, exist_ok=True)
    path = BROWSER_OUTPUT / name
    page.screenshot(path=str(path), full_page=True)
    return path
