"""What a failed browser test leaves behind, in ``test-output/browser/failed/<test>/``: each open tab's
screenshot, script state and visible text, and, for tabs opened with ``open_page``, the log of their console,
failed requests and WebSocket frames. A page that did not draw in time (seen only on a loaded machine) then
shows whether the server sent it anything, and when."""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Generator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Error, Page, WebSocket

from testsupport.streamlit_server import ROOT

BROWSER_OUTPUT = ROOT / "test-output" / "browser"
"""Where browser tests leave what they show: screenshots, and the reports of failed tests."""
FAILED_DIR = BROWSER_OUTPUT / "failed"
LOG_LINES = 2000
"""The last lines of a tab's log that are kept (a streaming page sends many frames)."""
REPORT_TIMEOUT_MS = 5000
SCRIPT_STATES = "() => [...document.querySelectorAll('[data-test-script-state]')].map(e => e.dataset.testScriptState)"


def record_page(page: Page) -> None:
    """Keep a log of ``page``'s console, failed requests and WebSocket frames, read if its test fails."""
    started = time.monotonic()
    log: deque[str] = deque(maxlen=LOG_LINES)
    page._failure_log = log  # type: ignore[attr-defined]

    def note(text: str) -> None:
        log.append(f"{time.monotonic() - started:9.3f} s  {text}")

    def on_websocket(socket: WebSocket) -> None:
        note(f"websocket open {socket.url}")
        socket.on("framesent", lambda payload: note(f"websocket sent {len(payload)} bytes"))
        socket.on("framereceived", lambda payload: note(f"websocket received {len(payload)} bytes"))
        socket.on("socketerror", lambda error: note(f"websocket error {error}"))
        socket.on("close", lambda _: note("websocket closed"))

    page.on("console", lambda message: note(f"console {message.type}: {message.text[:500]}"))
    page.on("pageerror", lambda error: note(f"page error: {error}"))
    page.on("requestfailed", lambda request: note(f"request failed: {request.url} {request.failure}"))
    page.on("websocket", on_websocket)


def _report_page(page: Page, folder: Path, name: str) -> None:
    try:
        page.screenshot(path=str(folder / f"{name}.png"), timeout=REPORT_TIMEOUT_MS)
        states = page.evaluate(SCRIPT_STATES)
        text = page.evaluate("() => document.body.innerText.slice(0, 4000)")
        summary = f"address: {page.url}\nscript state: {json.dumps(states)}\n\n{text}\n"
    except Error as exc:  # the tab may be the thing that broke
        summary = f"address: {page.url}\nnot readable: {exc}\n"
    log = getattr(page, "_failure_log", None)
    if log is not None:
        summary += "\n--- console, failed requests and WebSocket frames ---\n" + "\n".join(log) + "\n"
    (folder / f"{name}.txt").write_text(summary)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """After a browser test's failed call, every tab of its browser reported (see the module docstring)."""
    report = yield
    if report.when != "call" or not report.failed:
        return report
    browsers = [value for value in getattr(item, "funcargs", {}).values() if isinstance(value, Browser)]
    if browsers:
        folder = FAILED_DIR / re.sub(r"[^\w.-]+", "_", item.nodeid)[:150]
        folder.mkdir(parents=True, exist_ok=True)
        for b, browser in enumerate(browsers):
            for c, context in enumerate(browser.contexts):
                for p, page in enumerate(context.pages):
                    _report_page(page, folder, f"tab-{b}-{c}-{p}")
        report.sections.append(("browser tabs", f"each tab's screenshot, text and log: {folder}"))
    return report
