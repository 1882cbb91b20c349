"""What watching a run costs the server, with Chromium tabs on a real ``streamlit run app.py`` over PostgreSQL,
every figure against a baseline measured in the same run (issue 20, issue 21):

1. database queries per second per idle watching tab (a tab open on a conversation, nothing happening):
   transactions counted by PostgreSQL (``pg_stat_database``; each statement is one) with the tab open,
   minus the same time with no tab; target 0;
2. server CPU per second of streaming for one watching tab: a run streaming for several seconds, started by
   this bench's process (so the run's own work is not the server's), with one tab watching it, minus the same
   run with no tab (the median of ``ROUNDS`` such pairs, taken in turns); target at most 0.05 CPU-s/s; printed
   next to its floor: a tab on ``bench/live_floor_page.py`` (a refresh every fifth of a second, as our running
   turn's, drawing a growing answer and Stop from constants), what Streamlit charges before any of our work;
   and, from the watching tab's own frames, how often its answer grew while its text arrived (target: at least
   every 250 ms), apart from the page's redraws as the run starts and ends;
3. opening the conversation in a tab (navigation to a usable chat input) while two other tabs watch a live run,
   against the same with no run and no other tab; target at most 1.2x; with the cores Chromium and the server
   use while the two tabs watch (the new tab's navigation shares the machine with the browser drawing them);
4. the time from the provider's streamed event to its text on the page, for a run executing in another process
   (this bench's) against a run started from the page (the server's own process); target at most +300 ms.

Run: ``flock /tmp/agent-heavy.lock .venv/bin/python -m bench.bench_live_page`` (about three minutes; needs Debian's
``chromium`` and ``postgresql-15``).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

from agent_app.chat_handler import ChatHandler
from agent_app.registry import ToolRegistry
from agent_app.runs.manager import ThreadRunManager
from agent_app.runs.models import Run
from agent_app.runs.turn import Assistant, run_turn
from agent_app.settings import load_settings
from agent_app.storage import PostgresStorage
from agent_app.types import AgentContext, ChatMessage
from bench.process_cpu import cpu_seconds, descendants, total_cpu_seconds
from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.replies import Reply
from fake_llm.streams import StreamScript, split_text
from testsupport.postgres_server import running_postgres
from testsupport.streamlit_server import StreamlitServer, run_streamlit

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
VIEWPORT: ViewportSize = {"width": 1440, "height": 900}
TIMEOUT_MS = 60_000
IDLE_SECONDS = 10.0
WORDS = 100
WORD_SECONDS = 0.06
STREAM_SECONDS = WORDS * WORD_SECONDS
"""A streamed answer of WORDS words, one event each, WORD_SECONDS apart: six seconds of streaming."""
ROUNDS = 3
"""Streamed answers watched and not, in turns (the median is printed: one pair varies with the machine)."""
TARGET_QUERIES = 0.0
TARGET_CPU_PER_SECOND = 0.05
TARGET_OPEN_RATIO = 1.2
TARGET_EXTRA_LATENCY_MS = 300.0
TARGET_UPDATE_GAP_MS = 250.0
INPUT = "Ask about your media…"


def transactions(url: str, database: str) -> int:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        row = connection.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def queries_per_second(url: str, database: str, seconds: float) -> float:
    """Transactions per second on ``database`` over ``seconds`` (PostgreSQL reports them within a second)."""
    time.sleep(1.5)  # what went before is reported
    before = transactions(url, database)
    time.sleep(seconds)
    time.sleep(1.5)
    return (transactions(url, database) - before - 1) / seconds  # the first count's own transaction


def answer_reply(tag: str = "w") -> tuple[str, Reply]:
    """WORDS words ``<tag>000`` to ``<tag>099``, streamed one event each (a tag of its own: words no earlier
    answer on the page has)."""
    answer = " ".join(f"{tag}{n:03d}" for n in range(WORDS))
    return answer, streamed(openai_text(answer), StreamScript(pieces=WORDS, delay_seconds=WORD_SECONDS))


def open_tab(browser: Browser, url: str) -> tuple[Page, float]:
    """A tab at ``url``, and the seconds until its chat input is usable."""
    page = browser.new_page(viewport=VIEWPORT)
    started = time.perf_counter()
    page.goto(url)
    page.get_by_placeholder(INPUT).wait_for(timeout=TIMEOUT_MS)
    return page, time.perf_counter() - started


def watching_floor(browser: Browser, floor: StreamlitServer) -> float:
    """Server CPU per second of a tab on ``bench/live_floor_page.py`` as its answer grows, minus none."""
    before = cpu_seconds(floor.process.pid)
    time.sleep(STREAM_SECONDS)
    idle = (cpu_seconds(floor.process.pid) - before) / STREAM_SECONDS
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{floor.base_url}/?word_seconds={WORD_SECONDS}")
    page.get_by_text("w005").wait_for(timeout=TIMEOUT_MS)
    before = cpu_seconds(floor.process.pid)
    time.sleep(STREAM_SECONDS)
    watched = (cpu_seconds(floor.process.pid) - before) / STREAM_SECONDS
    page.close()
    return max(0.0, watched - idle)


def finish(manager: ThreadRunManager, run: Run) -> None:
    deadline = time.monotonic() + 120
    while (current := manager.get(run.id)) is not None and current.active:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)


TEXT_ROOTS = '[document.body, ...Array.from(document.querySelectorAll("*"), (e) => e.shadowRoot).filter(Boolean)]'
"""The page's text in parts: the body and every component's shadow root (the chat's bubbles are in one, and the
body's text does not include it)."""
SHOWS_TEXT = f"w => {TEXT_ROOTS}.some((root) => root.textContent.includes(w))"
"""Whether the page shows ``w``."""


RECORD_UPDATES = (
    """(tag) => {
  window.__updates = [];  // [ms, words of the answer shown], each time the number of words shown changed
  let shown = -1;
  const words = () => {
    const roots = __ROOTS__;
    const word = new RegExp(tag + "[0-9]{3}", "g");
    return Math.max(0, ...roots.map((root) => (root.textContent.match(word) || []).length));
  };
  const frame = () => {
    const count = words();
    if (count !== shown) { shown = count; window.__updates.push([performance.now(), count]); }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""
).replace("__ROOTS__", TEXT_ROOTS)
"""Records in the page, every frame, how many words of the streamed answer (``<tag>NNN``) it shows."""


def update_gaps(page: Page) -> list[float]:
    """Milliseconds between the page's updates of the answer while its text arrived (from its first words
    shown to its last: every update then adds words; the text is complete at the last)."""
    updates: list[tuple[float, int]] = page.evaluate("window.__updates")
    arriving = [(at, count) for at, count in updates if count > 0]
    times = [at for at, count in arriving[: next(i for i, (_, count) in enumerate(arriving) if count >= WORDS) + 1]]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def word_latencies(page: Page, fake: FakeLLMServer, tag: str, started: Callable[[], object]) -> list[float]:
    """Start the run, then for every tenth word: seconds from the fake model sending it to the page showing it."""
    asked = len(fake.chat.requests)
    started()
    seen: dict[int, float] = {}
    for n in range(0, WORDS, 10):
        page.wait_for_function(SHOWS_TEXT, arg=f"{tag}{n:03d}", timeout=TIMEOUT_MS)
        seen[n] = time.perf_counter()
    sent = fake.chat.requests[asked].event_times
    answer = answer_reply(tag)[0]
    ends = list(itertools.accumulate(len(piece) for piece in split_text(answer, WORDS)))
    # event 0 carries the role; piece p is event p + 1, and word n is whole once the piece holding its end is in
    carrying = {n: 1 + bisect.bisect_left(ends, answer.index(f"{tag}{n:03d}") + len(tag) + 3) for n in seen}
    return [seen[n] - sent[carrying[n]] for n in seen]


@contextmanager
def setup(workdir: Path) -> Iterator[tuple[StreamlitServer, StreamlitServer, PostgresStorage, FakeLLMServer, str, str]]:
    """Our page's server over a new PostgreSQL database, the floor page's server, storage on that database, the
    fake model, the database's URL and name."""
    with running_postgres() as postgres, FakeLLMServer() as fake:
        name = postgres.create_database()
        url = postgres.url(name)
        env = {
            "AGENT_DATA_DIR": str(workdir / "data"),
            "AGENT_DATABASE_URL": url,
            "LLM_PROVIDER": "openai-compatible",
            "LLM_BASE_URL": fake.openai_base_url,
            "LLM_MODEL": "fake-model",
            "LLM_API_KEY": "bench-key-not-secret",
            "LLM_MAX_RETRIES": "0",
        }
        os.environ.update(env)  # this process's own runs: the same model and database
        storage = PostgresStorage(workdir / "data", url)
        with run_streamlit(env, workdir) as server, run_streamlit(env, workdir, "bench/live_floor_page.py") as floor:
            yield server, floor, storage, fake, url, name
        storage.close_pool()


def watched_and_not(
    browser: Browser, page_url: str, run_here: Callable[[str, str], Run], finish_run: Callable[[Run], None], pid: int
) -> tuple[list[float], list[list[float]]]:
    """``ROUNDS`` pairs of streamed answers, one with no tab and one with a tab watching: each pair's server CPU
    per second the watching tab added, and, for each watched answer, the gaps (ms) between the tab's updates of
    it."""
    per_tab_costs: list[float] = []
    gaps: list[list[float]] = []
    for round_number in range(ROUNDS):
        costs = {}
        for watching in (False, True):
            tag = f"s{round_number}{int(watching)}"  # words no answer before has
            watcher = open_tab(browser, page_url)[0] if watching else None
            if watcher is not None:
                watcher.evaluate(RECORD_UPDATES, tag)
            before, started = cpu_seconds(pid), time.perf_counter()
            finish_run(run_here("Stream please", tag))
            if watcher is not None:
                watcher.get_by_text(f"{tag}{WORDS - 1:03d}").last.wait_for(timeout=TIMEOUT_MS)
            costs[watching] = (cpu_seconds(pid) - before) / (time.perf_counter() - started)
            if watcher is not None:
                gaps.append(update_gaps(watcher))
                watcher.close()
        per_tab_costs.append(max(0.0, costs[True] - costs[False]))
    return per_tab_costs, gaps


def main() -> None:  # noqa: PLR0915 - one bench, its steps in order
    with tempfile.TemporaryDirectory() as folder, setup(Path(folder)) as (server, floor, storage, fake, url, database):
        project = storage.create_project("Bench")
        chat = storage.create_conversation(project.id, "Watched")
        storage.append_message(chat.id, ChatMessage(role="user", content="First question"))
        storage.append_message(chat.id, ChatMessage(role="assistant", content="First answer."))
        page_url = f"{server.base_url}/?project={project.id}&chat={chat.id}"
        settings = load_settings()
        registry = ToolRegistry()
        assistant = Assistant(ChatHandler(settings, []), registry, settings)
        manager = ThreadRunManager(storage, functools.partial(run_turn, storage, lambda: assistant))
        pid = server.process.pid
        context = AgentContext(project_id=project.id)

        def run_here(question: str, tag: str = "w") -> Run:
            fake.chat.push(answer_reply(tag)[1])
            return manager.start(chat.id, context, ChatMessage(role="user", content=question))

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            warm, _ = open_tab(browser, page_url)  # the server's first page (imports, caches)
            warm.close()

            # 1. queries per idle watching tab
            base_queries = queries_per_second(url, database, IDLE_SECONDS)
            tab, _ = open_tab(browser, page_url)
            tab_queries = queries_per_second(url, database, IDLE_SECONDS)
            per_tab = max(0.0, tab_queries - base_queries)
            print(
                f"1. queries/s: no tab {base_queries:.2f}, one idle watching tab {tab_queries:.2f}: "
                f"{per_tab:.2f} per tab (target {TARGET_QUERIES:g})"
            )

            # 2. server CPU per second of streaming, one tab watching vs none, in turns; next to the floor
            tab.close()
            time.sleep(1.0)
            per_tab_costs, gaps = watched_and_not(browser, page_url, run_here, lambda run: finish(manager, run), pid)
            per_second = statistics.median(per_tab_costs)
            floor_per_second = statistics.median(watching_floor(browser, floor) for _ in range(ROUNDS))
            print(
                f"2. server CPU while a run streams: {per_second:.3f} CPU-s/s per watching tab (median of "
                f"{', '.join(f'{cost:.3f}' for cost in per_tab_costs)}; target <= {TARGET_CPU_PER_SECOND}); "
                f"the floor, Streamlit's refresh at our cadence drawing from constants, {floor_per_second:.3f}: "
                f"{per_second / floor_per_second:.2f}x"
            )
            steady = [gap for run_gaps in gaps for gap in run_gaps[1:-1]]
            edges = [gap for run_gaps in gaps for gap in (run_gaps[0], run_gaps[-1])]
            print(
                f"   the watching tab's answer grew every {statistics.median(steady):.0f} ms (median), at most "
                f"{max(steady):.0f} ms apart between its first and last updates (target: every <= "
                f"{TARGET_UPDATE_GAP_MS:.0f} ms while text arrives); the first update after the page's redraw as "
                f"the run starts, and the last (the run's end redraws the page), {min(edges):.0f}-{max(edges):.0f} ms"
            )

            # 3. opening the conversation while two other tabs watch a live run, against no run and no tab: the
            # navigation time and the server CPU of the load (the watchers' own rate, measured just before, taken off)
            idle_opens, idle_cpus = [], []
            for _ in range(3):
                before = cpu_seconds(pid)
                page, seconds = open_tab(browser, page_url)
                idle_cpus.append(cpu_seconds(pid) - before)
                idle_opens.append(seconds)
                page.close()
            busy_opens, busy_cpus, browser_cores, server_cores = [], [], [], []
            for round_number in range(3):
                watchers = [open_tab(browser, page_url)[0] for _ in range(2)]
                run = run_here("Stream while others open", f"b{round_number}")
                watchers[0].get_by_text(f"b{round_number}005").last.wait_for(timeout=TIMEOUT_MS)
                chromium = descendants(os.getpid(), CHROMIUM)
                before, browser_before, started = cpu_seconds(pid), total_cpu_seconds(chromium), time.perf_counter()
                time.sleep(1.0)
                rate = (cpu_seconds(pid) - before) / (time.perf_counter() - started)
                server_cores.append(rate)
                browser_cores.append((total_cpu_seconds(chromium) - browser_before) / (time.perf_counter() - started))
                before = cpu_seconds(pid)
                page, seconds = open_tab(browser, page_url)
                busy_cpus.append(cpu_seconds(pid) - before - rate * seconds)
                busy_opens.append(seconds)
                finish(manager, run)
                for tab_page in (*watchers, page):
                    tab_page.close()
            idle_open, busy_open = statistics.median(idle_opens), statistics.median(busy_opens)
            idle_cpu, busy_cpu = statistics.median(idle_cpus), statistics.median(busy_cpus)
            print(
                f"3. opening the conversation: server CPU alone {idle_cpu:.2f} s, while two tabs watch a live run "
                f"{busy_cpu:.2f} s: {busy_cpu / idle_cpu:.2f}x (target <= {TARGET_OPEN_RATIO}); navigation to a "
                f"usable input {idle_open:.2f} s against {busy_open:.2f} s: {busy_open / idle_open:.2f}x; while the "
                f"two tabs watch, Chromium uses {statistics.median(browser_cores):.2f} of the machine's "
                f"{os.cpu_count()} cores and the server {statistics.median(server_cores):.2f}"
            )

            # 4. provider's event to text on the page: the run in another process vs in the page's own
            watcher, _ = open_tab(browser, page_url)
            elsewhere_runs: list[Run] = []
            elsewhere = word_latencies(
                watcher, fake, "other", lambda: elsewhere_runs.append(run_here("Elsewhere", "other"))
            )
            finish(manager, elsewhere_runs[0])
            watcher.get_by_placeholder(INPUT).wait_for(timeout=TIMEOUT_MS)
            watcher.close()
            own, _ = open_tab(browser, page_url)
            fake.chat.push(answer_reply("own")[1])

            def ask_on_page() -> None:
                box = own.get_by_placeholder(INPUT)
                box.fill("On the page")
                box.press("Enter")

            here = word_latencies(own, fake, "own", ask_on_page)
            own.get_by_placeholder(INPUT).wait_for(timeout=TIMEOUT_MS)  # the run is over
            extra_ms = (statistics.median(elsewhere) - statistics.median(here)) * 1000
            print(
                f"4. provider event to page text: run in another process {statistics.median(elsewhere) * 1000:.0f} ms,"
                f" run in the page's process {statistics.median(here) * 1000:.0f} ms: {extra_ms:+.0f} ms "
                f"(target <= +{TARGET_EXTRA_LATENCY_MS:.0f} ms)"
            )
            browser.close()
        manager.close()


if __name__ == "__main__":
    main()
