"""SIGKILL (not SIGTERM) of the real server, ``streamlit run app.py`` killed by its own PID: during a tool run,
during a burst of message writes, during an upload. After each kill the server is started again on the same
data folder: ``PRAGMA integrity_check`` is ok, everything committed before the kill is still there, no
``.part`` file is left, and the conversation sends a valid history (the route would answer 400 otherwise, and
the model is checked to have received every tool call answered).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from fake_llm import FakeLLMServer, delayed, hang, openai_text, openai_tool_calls, tool_call
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page
from tests.media_samples import make_video
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

BURST_ROUND_SECONDS = 0.05
"""How long the model takes per request of the write burst."""


def sigkill(server: StreamlitServer) -> None:
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=10)
    assert server.process.returncode == -signal.SIGKILL


def wait_for(condition: Any, timeout: float = 30.0, step: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


def stored(data_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every conversation's messages as a reader sees them now (SQLite recovers a killed writer's WAL)."""
    with sqlite3.connect(data_dir / "agent.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = db.execute("SELECT conversation_id, body FROM messages ORDER BY seq").fetchall()
    conversations: dict[str, list[dict[str, Any]]] = {}
    for conversation_id, body in rows:
        conversations.setdefault(conversation_id, []).append(json.loads(body))
    return conversations


def parts(data_dir: Path) -> list[str]:
    return sorted(p.name for p in (data_dir / "media").iterdir() if p.name.endswith(".part"))


def check_valid_history(sent: list[dict[str, Any]]) -> None:
    """What the model received: every assistant tool call answered by one tool message, right after it."""
    expected: list[str] = []
    for message in sent[1:]:
        if expected:
            assert message["role"] == "tool" and message["tool_call_id"] == expected.pop(0), sent
            continue
        assert message["role"] != "tool", sent
        expected = [call["id"] for call in message.get("tool_calls") or []]
    assert not expected, sent


def reopen_and_retry(page: Page, server: StreamlitServer, conversation_id: str, fake: FakeLLMServer) -> None:
    """Open the conversation on the restarted server, Retry it, and see the model's answer."""
    fake.chat.push(openai_text("Recovered after the crash."))
    page.goto(f"{server.base_url}/?chat={conversation_id}")
    retry = page.get_by_role("button", name="Retry")
    expect(retry).to_be_visible(timeout=UI_TIMEOUT_MS)
    retry.click()
    expect(page.get_by_text("Recovered after the crash.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    check_valid_history(fake.chat.last.json["messages"])


def test_sigkill_during_a_tool_run_a_message_burst_and_an_upload_loses_nothing_committed(
    browser: Browser, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = app_env(fake_llm, data_dir)
    clip = make_video(tmp_path / "harbour.mp4", seconds=2.0)

    # 1. During a tool run: the transcription never answers; the server dies while the tool waits for it.
    fake_llm.transcription.push(hang(60))
    fake_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {}, id="call_k1")))
    with run_streamlit(env, tmp_path) as server:
        page = open_page(browser, server.base_url)
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(clip))
        expect(page.get_by_text("Added “harbour.mp4”")).to_be_visible(timeout=UI_TIMEOUT_MS)
        ask(page, "What is said in the harbour clip?")
        wait_for(lambda: len(fake_llm.transcription.requests) == 1)
        sigkill(server)
    [(first_id, before)] = stored(data_dir).items()
    assert [m["role"] for m in before] == ["user", "assistant"] and before[1]["toolCalls"][0]["id"] == "call_k1"
    with run_streamlit(env, tmp_path) as server:
        reopen_and_retry(page, server, first_id, fake_llm)
        sent = fake_llm.chat.last.json["messages"]
        assert sent[-1]["tool_call_id"] == "call_k1" and "Interrupted" in sent[-1]["content"]
        assert stored(data_dir)[first_id][: len(before)] == before
        page.get_by_role("button", name="New chat").click()
        # 2. During a burst of writes: every answer is another tool call (a missing asset fails at once),
        # each round writes two messages; the server dies at a random moment of the round after the third
        # request. Each answer takes 50 ms, so the 8-request run is still going when the kill comes even
        # when a busy machine is slow to see the third request (a finished run has nothing to interrupt).
        busy = openai_tool_calls(tool_call("transcribe_video", {"assetId": "0" * 32}))
        fake_llm.chat.default = delayed(busy, BURST_ROUND_SECONDS)
        asked = len(fake_llm.chat.requests)
        ask(page, "Transcribe everything, again and again")
        wait_for(lambda: len(fake_llm.chat.requests) >= asked + 3)
        time.sleep(random.uniform(0.0, BURST_ROUND_SECONDS))
        sigkill(server)
    fake_llm.chat.default = openai_text("fake reply")
    last_sent = fake_llm.chat.last.json["messages"][1:]  # committed before it was sent
    second_id, burst = next((cid, msgs) for cid, msgs in stored(data_dir).items() if cid != first_id)
    assert [m["role"] for m in burst[: len(last_sent)]] == [m["role"] for m in last_sent]
    with run_streamlit(env, tmp_path) as server:
        reopen_and_retry(page, server, second_id, fake_llm)
        assert stored(data_dir)[second_id][: len(burst)] == burst
        # 3. During an upload: 120 MB copied into the media folder; the server dies while the .part exists.
        big = tmp_path / "big.mp4"
        big.write_bytes(os.urandom(120 * 1024 * 1024))
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(big))
        wait_for(lambda: bool(parts(data_dir)), timeout=60, step=0.001)
        sigkill(server)
    assert parts(data_dir), "the kill came after the copy"
    committed = stored(data_dir)
    with run_streamlit(env, tmp_path) as server:
        page = open_page(browser, server.base_url)
        assert parts(data_dir) == []  # the dead server's partial upload is cleared at start
        assert stored(data_dir) == committed
        assert len([p for p in (data_dir / "media").iterdir()]) == 1  # the clip, nothing else
        expect(page.get_by_text("harbour.mp4").first).to_be_visible(timeout=UI_TIMEOUT_MS)
