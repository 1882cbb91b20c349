"""What opening the workspace costs, in Chromium against a real server, as ratios against Streamlit's hello
world (``bench/hello_page.py``, served by a second server in the same run) and against the small case.

Printed (``--loads`` tabs each and six times as many reruns and switches, taken in turns so a change in the
machine's load falls on all; CPU as a mean, times as medians): the server's CPU per page load (target ≤ 1.5x
hello world's) and the time from navigation to a usable chat input (≤ 1.3x), for a first visit (a new browser
context, nothing cached) and a revisit (Streamlit's hashed static files in the browser's cache); switching
conversation in the sidebar against a hello-world rerun (server CPU, and the time in the page from the press to
the first frame showing the new text, :func:`click_until_shown`; ≤ 1.5x), next to the floor: the same switch on
``bench/switch_floor_page.py`` (a third server: two keyed fragments, one HTML block of 13 messages and a chat
input in one, two buttons in the other), the least a switch can draw, which shows how much of the 1.5x
Streamlit's own fragment machinery takes, the same floor with its messages in our chat's history element
(``?floor=history``), which shows what that one element adds, and with every element our switch draws
(``?floor=ours``), which shows what our page's elements cost before any of our work; the page load's floor:
``bench/load_floor_page.py`` (a fourth server) drawing the elements our page draws on the small case from
constants, first visit and revisit, which shows how much of the load Streamlit charges for that much on a page
before any of our work; and the
page load of a 1,000-message conversation, a 200-asset library and a one-hour transcript against the small
case (≤ 1.5x each).
Server CPU is the server process's CPU time (its CPU clock, :mod:`bench.process_cpu`), from the navigation
(or the click) until the page is idle (Streamlit's ``data-test-script-state``) and the server has stopped
working. All four servers run with the repository's ``.streamlit/config.toml``.

Run: ``.venv/bin/python -m bench.bench_page_load`` (about four minutes; needs Debian's chromium).
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.media.transcript_types import Transcript
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from bench.bench_page_rerun import conversation
from bench.process_cpu import cpu_seconds
from fake_llm import FakeLLMServer
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, IDLE, app_env
from tests.creator_support import hour_transcript
from tests.media_samples import make_video
from testsupport.media_factory import tiny_wav
from testsupport.streamlit_server import StreamlitServer, run_streamlit

VIEWPORT = {"width": 1440, "height": 900}
LOAD_TARGET = 1.5
NAVIGATION_TARGET = 1.3
SWITCH_TARGET = 1.5
SIZE_TARGET = 1.5
RERUNS_PER_LOAD = 6
"""Reruns and switches per ``--loads``: a rerun takes a few ms, so more of them steady the mean."""
USABLE_INPUT = '[data-testid="stChatInputTextArea"]:enabled'
TIMEOUT_MS = 120_000
IDLE_CPU_SECONDS = 0.001
"""What a server at rest uses in a tenth of a second (its watchers' polls): less counts as settled."""


def server_cpu(server: StreamlitServer) -> float:
    """CPU seconds (all threads) the server process has used so far."""
    return cpu_seconds(server.process.pid)


def settled_cpu(server: StreamlitServer) -> float:
    """The server's CPU once it has stopped working (under a millisecond used in a tenth of a second)."""
    last = server_cpu(server)
    for _ in range(50):
        time.sleep(0.1)
        now = server_cpu(server)
        if now - last < IDLE_CPU_SECONDS:
            return now
        last = now
    return last


@dataclass
class Sample:
    cpu: float
    seconds: float


def measure(server: StreamlitServer, act: Callable[[], object], ready: Callable[[], None]) -> Sample:
    """Server CPU from before ``act`` until the page is idle again; wall time until ``ready`` returns."""
    cpu = settled_cpu(server)
    started = time.perf_counter()
    act()
    ready()
    seconds = time.perf_counter() - started
    return Sample(settled_cpu(server) - cpu, seconds)


def page_load(browser: Browser, server: StreamlitServer, query: str, context: BrowserContext | None = None) -> Sample:
    """A new tab opened at ``query``: in a new browser context (nothing cached, a first visit) unless
    ``context`` is given (a revisit: Streamlit's hashed static files come from the browser's cache)."""
    page = browser.new_page(viewport=VIEWPORT) if context is None else context.new_page()  # type: ignore[arg-type]
    try:

        def ready() -> None:
            page.wait_for_selector(USABLE_INPUT, timeout=TIMEOUT_MS)
            page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)

        return measure(server, lambda: page.goto(f"{server.base_url}/{query}", wait_until="commit"), ready)
    finally:
        page.close()
        if context is None:
            page.context.close()


SHOWN_AFTER_PRESS_JS = """([text, idle, timeoutMs]) => {
  const watch = {};
  watch.shown = new Promise((resolve, reject) => {
    let pressed = null;
    window.addEventListener("pointerdown", () => { pressed = performance.now(); }, { capture: true, once: true });
    setTimeout(() => reject(new Error(`"${text}" not shown within ${timeoutMs} ms`)), timeoutMs);
    const shown = () => {
      if (!document.querySelector(idle)) { return false; }
      if (document.body.textContent.includes(text)) { return true; }
      const hosts = Array.from(document.querySelectorAll("*")).filter((e) => e.shadowRoot);
      return hosts.some((host) => host.shadowRoot.textContent.includes(text));
    };
    const frame = (now) => {
      if (pressed !== null && shown()) { resolve(now - pressed); } else { requestAnimationFrame(frame); }
    };
    requestAnimationFrame(frame);
  });
  return watch;
}"""
"""In the page: from the press to the first frame that shows ``text`` (in the page or in a component's shadow
root) with the page idle (:data:`IDLE`), in ms on the page's clock; it fails after :data:`TIMEOUT_MS`. Checked
once a frame, when the browser paints. Not Playwright's wait for a text: it searches the whole DOM on the page's
own thread again and again, which a Chromium profile of our switch showed delaying the very drawing it waited
for, the more the larger the page."""


def click_until_shown(server: StreamlitServer, page: Page, button: str, text: str) -> Sample:
    """Press ``button``: server CPU until the server is idle again, time until ``text`` shows in the page
    (:data:`SHOWN_AFTER_PRESS_JS`)."""
    cpu = settled_cpu(server)
    watch = page.evaluate_handle(SHOWN_AFTER_PRESS_JS, [text, IDLE, TIMEOUT_MS])
    page.get_by_role("button", name=button).click()
    milliseconds = float(page.evaluate("(watch) => watch.shown", watch))
    return Sample(settled_cpu(server) - cpu, milliseconds / 1000)


def hello_rerun(server: StreamlitServer, page: Page, count: int) -> Sample:
    return click_until_shown(server, page, "Again", f"Pressed {count} times")


def switch_conversation(server: StreamlitServer, page: Page, title: str) -> Sample:
    """Open the conversation titled ``title`` from the sidebar; shown once its last answer is."""
    return click_until_shown(server, page, f"{title} —", f"Answer in {title}")


# --- the data ---------------------------------------------------------------------------------------


def _clip(storage: SqliteStorage, work: Path, project_id: str, transcript: Transcript, seconds: float) -> str:
    """A video (its own length, so its own content hash) with ``transcript`` cached for it."""
    clip = make_video(work / f"clip-{seconds}.mp4", seconds=seconds)
    with clip.open("rb") as handle:
        asset = storage.import_asset(project_id, clip.name, handle)
    with storage.media_file(asset.id) as path:
        assert path is not None
        cache = TranscriptCache(storage.data_dir)
        cache.put(CacheKey(cache.content_hash(path), transcript.backend, transcript.model), transcript, asset.id)
    return asset.id


def _chat(storage: SqliteStorage, project_id: str, title: str, messages: list[ChatMessage]) -> str:
    chat = storage.create_conversation(project_id, title)
    for message in messages:
        storage.append_message(chat.id, message)
    storage.append_message(chat.id, ChatMessage(role="user", content=f"And {title}?"))
    storage.append_message(chat.id, ChatMessage(role="assistant", content=f"Answer in {title}"))
    return chat.id


def seed(data_dir: Path, work: Path) -> dict[str, str]:
    """The cases' addresses: ``small`` (a clip with a short transcript, a 10-message conversation, a second
    one to switch to), ``messages`` (1,000), ``assets`` (200 in the library), ``transcript`` (one hour)."""
    storage = SqliteStorage(data_dir)
    short = hour_transcript(segments=20, duration_ms=80_000)
    queries = {}
    for index, case in enumerate(("small", "messages", "assets", "transcript")):
        project = storage.create_project(case)
        if case == "assets":
            for number in range(199):
                storage.import_asset(project.id, f"take-{number:03d}.wav", io.BytesIO(tiny_wav(number)))
        transcript = hour_transcript() if case == "transcript" else short
        asset_id = _clip(storage, work, project.id, transcript, 12.0 + index / 10)
        if case == "small":
            _chat(storage, project.id, "Second chat", conversation(10))
        chat_id = _chat(storage, project.id, "First chat", conversation(1000 if case == "messages" else 10))
        queries[case] = f"?project={project.id}&chat={chat_id}&asset={asset_id}"
    storage.close()
    return queries


# --- the run ----------------------------------------------------------------------------------------


def median(samples: list[Sample], field: str) -> float:
    """The median time; for CPU the mean (``/proc`` counts in ticks of 10 ms, too coarse for a median of
    short reruns: the mean of many is not)."""
    values = [getattr(sample, field) for sample in samples]
    return float(statistics.mean(values) if field == "cpu" else statistics.median(values))


def verdict(name: str, ours: float, base: float, target: float, unit: str) -> None:
    ratio = ours / base
    print(f"{name:<44} {ours:>8.4f} {unit:<3} vs {base:>7.4f} {unit:<3} {ratio:>5.2f}x  target ≤ {target:g}x: "
          f"{'within' if ratio <= target else 'OVER'}")  # fmt: skip


@dataclass
class Servers:
    """The run's four servers, each on the same data and config."""

    hello: StreamlitServer
    ours: StreamlitServer
    floor: StreamlitServer
    """The least a switch can draw (``bench/switch_floor_page.py``)."""
    load_floor: StreamlitServer
    """Our page's elements from constants (``bench/load_floor_page.py``)."""


FLOORS = {
    "bare": "floor: switch",
    "history": "floor, our history element: switch",
    "ours": "floor, our elements: switch",
}
"""The switch floors (``bench/switch_floor_page.py?floor=...``) and how their lines are labelled."""


def _switch_pages(browser: Browser, servers: Servers, query: str) -> tuple[Page, Page, dict[str, Page]]:
    """A tab on each server (hello world, ours at ``query``) and one on each floor, loaded and idle."""
    addresses = [(servers.hello, "", IDLE), (servers.ours, query, USABLE_INPUT)]
    addresses += [(servers.floor, f"?floor={floor}", USABLE_INPUT) for floor in FLOORS]
    pages = []
    for server, address, ready in addresses:
        page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
        page.goto(f"{server.base_url}/{address}")
        page.wait_for_selector(ready, timeout=TIMEOUT_MS)
        page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
        pages.append(page)
    return pages[0], pages[1], dict(zip(FLOORS, pages[2:], strict=True))


def _switches(browser: Browser, servers: Servers, query: str, turns: int) -> None:
    """Hello-world reruns, our switches (the small case at ``query``) and the floors' switches, in turns; printed."""
    hello, ours, floor = servers.hello, servers.ours, servers.floor
    hello_page, our_page, floor_pages = _switch_pages(browser, servers, query)
    reruns: list[Sample] = []
    switches: list[Sample] = []
    floor_switches: dict[str, list[Sample]] = {name: [] for name in FLOORS}
    for turn in range(turns):
        title = ("Second chat", "First chat")[turn % 2]
        reruns.append(hello_rerun(hello, hello_page, turn + 1))
        switches.append(switch_conversation(ours, our_page, title))
        for name, page in floor_pages.items():
            floor_switches[name].append(switch_conversation(floor, page, title))
    verdict("switch conversation CPU vs hello rerun", median(switches, "cpu"), median(reruns, "cpu"),
            SWITCH_TARGET, "s")  # fmt: skip
    verdict("switch conversation time vs hello rerun", median(switches, "seconds"), median(reruns, "seconds"),
            SWITCH_TARGET, "s")  # fmt: skip
    print("floors vs hello rerun (bench/switch_floor_page.py: the least a switch can draw, then with our history")
    print("element, then with all our switch's elements: Streamlit's share)")
    for name, label in FLOORS.items():
        for field, what in (("cpu", "CPU"), ("seconds", "time")):
            verdict(f"{label} {what}", median(floor_switches[name], field), median(reruns, field), SWITCH_TARGET, "s")


def run(browser: Browser, servers: Servers, queries: dict[str, str], loads: int) -> None:
    hello, ours, load_floor = servers.hello, servers.ours, servers.load_floor
    page_load(browser, hello, "")  # warm the servers' imports and caches before measuring anything
    page_load(browser, load_floor, "")
    for query in queries.values():
        page_load(browser, ours, query)
    base: list[Sample] = []
    cases: dict[str, list[Sample]] = {case: [] for case in queries}
    hello_again, ours_again, floor_again = (browser.new_context(viewport=VIEWPORT) for _ in range(3))  # type: ignore[arg-type]
    page_load(browser, hello, "", hello_again)  # each context's cache filled once
    page_load(browser, ours, queries["small"], ours_again)
    page_load(browser, load_floor, "", floor_again)
    base_revisits: list[Sample] = []
    revisits: list[Sample] = []
    floor_loads: list[Sample] = []
    floor_revisits: list[Sample] = []
    for _ in range(loads):
        base.append(page_load(browser, hello, ""))
        for case, query in queries.items():
            cases[case].append(page_load(browser, ours, query))
        floor_loads.append(page_load(browser, load_floor, ""))
        base_revisits.append(page_load(browser, hello, "", hello_again))
        revisits.append(page_load(browser, ours, queries["small"], ours_again))
        floor_revisits.append(page_load(browser, load_floor, "", floor_again))
    small = cases["small"]
    print(f"page load and rerun, Chromium at 1440x900, {loads} loads and {loads * RERUNS_PER_LOAD} reruns each")
    print("CPU: the mean, time: the median")
    print("a load is a first visit (a new browser context) unless it says revisit (the browser's cache warm)")
    verdict("server CPU per page load vs hello world", median(small, "cpu"), median(base, "cpu"), LOAD_TARGET, "s")
    verdict("navigation to a usable input vs hello world", median(small, "seconds"), median(base, "seconds"),
            NAVIGATION_TARGET, "s")  # fmt: skip
    verdict("revisit: server CPU per load vs hello world", median(revisits, "cpu"), median(base_revisits, "cpu"),
            LOAD_TARGET, "s")  # fmt: skip
    verdict("revisit: navigation to usable input vs hello", median(revisits, "seconds"),
            median(base_revisits, "seconds"), NAVIGATION_TARGET, "s")  # fmt: skip
    print("floor: our page's elements from constants vs hello world (bench/load_floor_page.py: Streamlit's share)")
    for label, samples, baseline in (("load", floor_loads, base), ("revisit", floor_revisits, base_revisits)):
        verdict(f"floor: {label} server CPU vs hello world", median(samples, "cpu"), median(baseline, "cpu"),
                LOAD_TARGET, "s")  # fmt: skip
        verdict(f"floor: {label} navigation vs hello world", median(samples, "seconds"),
                median(baseline, "seconds"), NAVIGATION_TARGET, "s")  # fmt: skip
    _switches(browser, servers, queries["small"], loads * RERUNS_PER_LOAD)
    for case, label in (("messages", "1,000 messages"), ("assets", "200 assets"), ("transcript", "1-hour transcript")):
        for field, what in (("cpu", "CPU"), ("seconds", "time")):
            verdict(f"{label} load {what} vs small", median(cases[case], field), median(small, field),
                    SIZE_TARGET, "s")  # fmt: skip


@contextmanager
def seeded_world() -> Iterator[tuple[Path, dict[str, str], dict[str, str], Playwright]]:
    """What a page bench runs in: a temporary folder whose data :func:`seed` filled, the cases' addresses,
    the servers' environment (the fake model's), and Playwright."""
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as fake, sync_playwright() as playwright:
        work = Path(tmp)
        data_dir = work / "data"
        queries = seed(data_dir, work)
        yield work, queries, app_env(fake, data_dir), playwright


@contextmanager
def chromium(playwright: Playwright) -> Iterator[Browser]:
    """Debian's Chromium, closed at the end."""
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loads", type=int, default=5, help="page loads per case (median reported)")
    loads = parser.parse_args().loads
    with (
        seeded_world() as (work, queries, env, playwright),
        run_streamlit(env, work, "bench/hello_page.py") as hello,
        run_streamlit(env, work) as ours,
        run_streamlit(env, work, "bench/switch_floor_page.py") as floor,
        run_streamlit(env, work, "bench/load_floor_page.py") as load_floor,
        chromium(playwright) as browser,
    ):
        run(browser, Servers(hello, ours, floor, load_floor), queries, loads)


if __name__ == "__main__":
    main()
