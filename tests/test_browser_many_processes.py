"""Many processes on one PostgreSQL database, in a real browser (Debian's Chromium): two ``streamlit run``
processes, A and B, with no in-process worker (``AGENT_IN_PROCESS_WORKERS=0``), and ``python -m agent_app.worker``
processes executing their runs and transcriptions. A question sent on A streams live on B; Stop pressed on B
ends the model stream in the worker within a second; a worker killed with SIGKILL mid-answer shows as
interrupted with Retry on both pages, and Retry runs on a new worker; a worker killed mid-transcription leaves
the job to another worker, which finishes it.

The servers (fake LLM, database, A and B) are the module's; each test has its own project and workers."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from agent_app.storage import PostgresStorage
from agent_app.transcriptions.models import INTERRUPTED_TRANSCRIPTION
from agent_app.ui.live_status import LIVE_BUBBLE_PREFIX
from fake_llm import FakeLLMServer, delayed, openai_text, streamed, transcription_reply
from fake_llm.streams import StreamScript
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot
from tests.media_samples import make_video
from tests.run_processes import AppProcess, app_process
from tests.run_support import wait_until
from tests.storage_backends import PostgresForTests, fresh_database_url
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

WAIT = 30.0
STOP_WITHIN_SECONDS = 1.0
"""The issue's bound: Stop ends the model stream within a second, from any process."""
GROWING_PIECES = 3
"""Pieces of the answer B must show one after another while it streams."""
WORDS = 400
LONG_ANSWER = StreamScript(pieces=WORDS, delay_seconds=0.05)
"""Twenty seconds of streamed, numbered words (``w1 w2 …``): still streaming whenever the test acts, and how
far it got is read off the page."""
NUMBERED = " ".join(f"w{number}" for number in range(1, WORDS + 1))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    """One fake model and transcriber for the module; each test starts with ``reset()``."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def database(postgres_server: PostgresForTests) -> Iterator[str]:
    yield from fresh_database_url(postgres_server)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("many-processes")


@pytest.fixture(scope="module")
def env(llm: FakeLLMServer, database: str, folder: Path) -> dict[str, str]:
    """Every process's settings: the fake server, the shared database and data folder, no in-process worker."""
    return {**app_env(llm, folder / "data"), "AGENT_DATABASE_URL": database, "AGENT_IN_PROCESS_WORKERS": "0"}


@pytest.fixture(scope="module")
def pages(env: dict[str, str], folder: Path) -> Iterator[tuple[StreamlitServer, StreamlitServer]]:
    """The two page processes, A and B."""
    with ExitStack() as stack:
        yield stack.enter_context(run_streamlit(env, folder)), stack.enter_context(run_streamlit(env, folder))


@pytest.fixture(scope="module")
def storage(database: str, folder: Path) -> Iterator[PostgresStorage]:
    """The test's own look at the shared storage (to make projects and read what the processes wrote)."""
    opened = PostgresStorage(folder / "data", database)
    yield opened
    opened.close_pool()


@dataclass
class Deployment:
    """The module's processes and what they share; :meth:`worker` starts a worker process."""

    a: StreamlitServer
    b: StreamlitServer
    storage: PostgresStorage
    llm: FakeLLMServer
    env: dict[str, str]
    database: str
    folder: Path

    @contextmanager
    def worker(self, name: str) -> Iterator[AppProcess]:
        """A ``python -m agent_app.worker`` process (a short lease and queue heartbeat, so a kill shows soon)."""
        args = ["-m", "agent_app.worker", "--concurrency", "2", "--lease-seconds", "1.5",
                "--heartbeat-seconds", "0.5", "--stalled-seconds", "2"]  # fmt: skip
        with app_process(args, self.env, self.folder, name) as started:
            yield started


@pytest.fixture
def deployment(  # noqa: PLR0913, PLR0917 - the module's fixtures, gathered here once
    pages: tuple[StreamlitServer, StreamlitServer],
    storage: PostgresStorage,
    llm: FakeLLMServer,
    env: dict[str, str],
    database: str,
    folder: Path,
) -> Deployment:
    """The module's servers, the fake server's script and records reset for this test."""
    llm.reset()
    return Deployment(*pages, storage, llm, env, database, folder)


@pytest.fixture
def tabs(browser: Browser) -> Iterator[Callable[[str], Page]]:
    """Open a tab at an address (see :func:`open_page`); the test's tabs are closed after it."""
    opened: list[Page] = []

    def open_tab(url: str) -> Page:
        opened.append(open_page(browser, url))
        return opened[-1]

    yield open_tab
    for tab in opened:
        tab.close()


def _new_chat(storage: PostgresStorage) -> str:
    """A project and conversation of their own for one test: the page address that opens them."""
    project = storage.create_project("many processes")
    return f"/?project={project.id}&chat={storage.create_conversation(project.id).id}"


def _stop_button(page: Page) -> Locator:
    """The chat's Stop (not Streamlit's own, in its status widget while a script run takes a while)."""
    return page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop")


def _live_answer(page: Page) -> Locator:
    """The assistant's bubble of the run in progress (the live one, drawn above Stop)."""
    return page.locator(f'[data-key^="{LIVE_BUBBLE_PREFIX}"]').get_by_test_id("chatBubble")


def _words_shown(bubble: Locator) -> int:
    """How far the numbered answer got in ``bubble``: its highest word number."""
    return max((int(number) for number in re.findall(r"\bw(\d+)\b", bubble.inner_text())), default=0)


def _growing_pieces(page: Page, count: int) -> list[int]:
    """Wait for the live answer on ``page`` to grow ``count`` times; how far it was each time."""
    bubble = _live_answer(page)
    expect(bubble).to_contain_text(re.compile(r"\bw\d+\b"), timeout=UI_TIMEOUT_MS)
    seen = [_words_shown(bubble)]
    while len(seen) < count:
        expect(bubble).not_to_have_text(bubble.inner_text(), timeout=UI_TIMEOUT_MS)  # the next redraw
        if (shown := _words_shown(bubble)) > seen[-1]:
            seen.append(shown)
    return seen


def _transcription_state(storage: PostgresStorage, asset_id: str) -> str | None:
    job = storage.transcription_store().latest(asset_id)
    return None if job is None else job.state


def _latest_run_owner(database: str, conversation_query: str) -> str:
    chat = conversation_query.rsplit("chat=", 1)[1]
    with psycopg.connect(database) as db:
        row = db.execute(
            "SELECT owner FROM runs WHERE conversation_id = %s ORDER BY seq DESC LIMIT 1", (chat,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_question_sent_on_a_streams_live_on_b_and_stop_pressed_on_b_ends_the_model_stream_within_a_second(
    tabs: Callable[[str], Page], deployment: Deployment
) -> None:
    run = deployment
    chat = _new_chat(run.storage)
    run.llm.chat.push(streamed(openai_text(NUMBERED), LONG_ANSWER))
    with run.worker("stop-worker"):
        a = tabs(run.a.base_url + chat)
        b = tabs(run.b.base_url + chat)  # open before the question: it shows the run without a reload
        ask(a, "Count for a long time")
        seen = _growing_pieces(b, GROWING_PIECES)
        print(f"B showed the answer from A's question growing: words {seen}")
        screenshot(b, "many-processes-live-on-b.png")
        [stream] = run.llm.chat.requests
        pressed = time.monotonic()
        _stop_button(b).click()
        assert stream.answered.wait(WAIT)
        latency = time.monotonic() - pressed
        print(f"Stop pressed on B: the model stream in the worker closed {latency * 1000:.0f} ms after")
        assert stream.closed_by_client and stream.events_sent < WORDS
        assert latency < STOP_WITHIN_SECONDS
        for tab in (b, a):
            expect(tab.get_by_text("Stopped.", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
            expect(_stop_button(tab)).to_have_count(0)
    assert len(run.llm.chat.requests) == 1


def test_a_worker_killed_mid_answer_shows_interrupted_with_retry_on_a_and_b_and_retry_runs_on_a_new_worker(
    tabs: Callable[[str], Page], deployment: Deployment
) -> None:
    run = deployment
    chat = _new_chat(run.storage)
    run.llm.chat.push(streamed(openai_text(NUMBERED), LONG_ANSWER))
    with run.worker("killed-worker") as first:
        a = tabs(run.a.base_url + chat)
        b = tabs(run.b.base_url + chat)
        ask(a, "A question cut short")
        for tab in (a, b):
            expect(_live_answer(tab)).to_contain_text(re.compile(r"\bw\d+\b"), timeout=UI_TIMEOUT_MS)
        first.signal(signal.SIGKILL)
        first.process.wait(timeout=WAIT)
    assert first.process.returncode == -signal.SIGKILL
    for tab in (a, b):  # each sees the run's lease run out while it shows the run
        expect(tab.get_by_text("did not finish")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(tab.get_by_role("button", name="Retry")).to_be_visible()
    screenshot(b, "many-processes-interrupted-on-b.png")
    assert len(run.llm.chat.requests) == 1  # never re-run by itself

    run.llm.chat.push(openai_text("Answered on the second worker."))
    with run.worker("second-worker") as second:
        b.get_by_role("button", name="Retry").click()
        expect(b.get_by_text("Answered on the second worker.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        a.reload()
        expect(a.get_by_text("Answered on the second worker.")).to_be_visible(timeout=UI_TIMEOUT_MS)
        assert _latest_run_owner(run.database, chat).split(":")[1] == str(second.process.pid)
    sent = [(m["role"], m["content"]) for m in run.llm.chat.last.json["messages"][1:]]
    assert sent == [("user", "A question cut short")]
    assert len(run.llm.chat.requests) == 2


def test_a_worker_killed_mid_transcription_leaves_it_to_another_worker_which_finishes_it(
    tabs: Callable[[str], Page], deployment: Deployment
) -> None:
    run = deployment
    project = run.storage.create_project("transcribed elsewhere")
    with make_video(run.folder / "harbour.mp4", seconds=2.0).open("rb") as clip:
        asset = run.storage.import_asset(project.id, "harbour.mp4", clip)
    opened = f"/?project={project.id}&asset={asset.id}"
    run.llm.transcription.push(
        delayed(transcription_reply("never heard"), 60.0),
        transcription_reply("the harbour at dawn", segments=[(0.0, 1.5, "the harbour at dawn")]),
    )
    with run.worker("transcribing-worker") as first:
        a = tabs(run.a.base_url + opened)
        a.get_by_role("button", name="Transcribe").click()
        wait_until(lambda: len(run.llm.transcription.requests) == 1, WAIT, "the worker never transcribed")
        expect(a.get_by_test_id("stProgress")).to_be_visible(timeout=UI_TIMEOUT_MS)
        first.signal(signal.SIGKILL)
        first.process.wait(timeout=WAIT)
    # A sees the job's lease run out (the page says it stopped with its server, and stops refreshing); the
    # queue's sweep gives the job to the next worker, which takes it up again.
    expect(a.get_by_text(INTERRUPTED_TRANSCRIPTION)).to_be_visible(timeout=UI_TIMEOUT_MS)
    with run.worker("finishing-worker"):
        wait_until(lambda: _transcription_state(run.storage, asset.id) == "done", 2 * WAIT, "not finished")
    done = run.storage.transcription_store().latest(asset.id)
    assert done is not None and done.fraction == 1.0 and done.error is None
    with psycopg.connect(run.database) as db:  # the killed worker's job finished, not a new one
        assert db.execute("SELECT id FROM transcriptions WHERE asset_id = %s", (asset.id,)).fetchall() == [(done.id,)]
    assert len(run.llm.transcription.requests) == 2
    a.reload()
    b = tabs(run.b.base_url + opened)
    for tab in (a, b):
        expect(tab.get_by_text("the harbour at dawn")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(tab.get_by_text(INTERRUPTED_TRANSCRIPTION)).to_have_count(0)
