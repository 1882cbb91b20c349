"""A freshly started server hit by many first requests at once (issue 13): every route request and every
page session sees the complete tool registry, and the first transcriptions load the offline model once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from fake_llm import CANARY_API_KEY, FakeLLMServer
from tests.page_session import connect_session, run_page
from tests.transcribe_support import SETTINGS
from testsupport.media_factory import speech_mp4
from testsupport.streamlit_server import ROOT, run_streamlit

pytestmark = pytest.mark.slow

FIRST_REQUESTS = 52
FIRST_TRANSCRIPTIONS = 6
HELLO = {"messages": [{"role": "user", "content": "hi"}]}


def _first_route_request(url: str, barrier: threading.Barrier) -> tuple[int, str]:
    with httpx.Client(timeout=120) as http:
        barrier.wait()
        response = http.post(url, json=HELLO)
    return response.status_code, response.text


def _first_page_run(base_url: str, barrier: threading.Barrier) -> tuple[int, str]:
    with connect_session(base_url) as socket:
        barrier.wait()
        run = run_page(socket)
    return run.finished_status, run.text


@pytest.mark.parametrize("page_sessions", [0, 8], ids=["route only", "route and page sessions"])
def test_fifty_concurrent_first_requests_all_see_the_tools(
    fake_llm: FakeLLMServer, tmp_path: Path, page_sessions: int
) -> None:
    """Route requests alone are the sharpest case: page sessions import most of the app while the route
    imports its SDK, which left the registry's half-built moment shorter (but not gone)."""
    route_requests = FIRST_REQUESTS - page_sessions
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_BASE_URL": fake_llm.openai_base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": CANARY_API_KEY,
        "LLM_MAX_RETRIES": "0",
        "AGENT_API_TOKEN": "",
        "AGENT_DATA_DIR": str(tmp_path / "data"),
    }
    with run_streamlit(env, tmp_path) as server:
        barrier = threading.Barrier(FIRST_REQUESTS)
        with ThreadPoolExecutor(FIRST_REQUESTS) as pool:
            routes = [
                pool.submit(_first_route_request, f"{server.base_url}/api/agent/chat", barrier)
                for _ in range(route_requests)
            ]
            pages = [pool.submit(_first_page_run, server.base_url, barrier) for _ in range(page_sessions)]
            answers = [future.result() for future in routes]
            runs = [future.result() for future in pages]
        log = server.output()
    failed = [answer for answer in answers if answer[0] != 200]
    assert not failed, f"{len(failed)} of {route_requests} failed, e.g. {failed[0]}\n{log[-3000:]}"
    assert all(json.loads(body)["content"] == "fake reply" for _, body in answers)
    # Every request carried the tool to the model: the registry was complete for all of them.
    tools = [json.loads(request.body)["tools"] for request in fake_llm.chat.requests]
    assert len(tools) == route_requests
    assert all([tool["function"]["name"] for tool in offered] == ["transcribe_video"] for offered in tools)
    for status, text in runs:
        assert status == 0, text[-2000:]  # finished successfully
        assert "Enabled tools: `transcribe_video`" in text
        assert "plugin" not in text, text[-2000:]


def test_first_transcriptions_at_once_load_the_model_once(tmp_path: Path) -> None:
    media = tmp_path / "talk.mp4"
    speech_mp4(media, ["Good morning from the harbour."])
    clean = {name: value for name, value in os.environ.items() if name not in SETTINGS}
    done = subprocess.run(
        [sys.executable, "-m", "tests.first_transcriptions", str(tmp_path / "data"), str(media),
         str(FIRST_TRANSCRIPTIONS)],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    errors = [outcome["error"] for outcome in report["outcomes"] if "error" in outcome]
    assert not errors, errors
    texts = [outcome["result"]["text"].lower() for outcome in report["outcomes"]]
    assert len(texts) == FIRST_TRANSCRIPTIONS and all("harbour" in text or "morning" in text for text in texts)
    models = [model for model, _, _ in report["loads"]]
    assert models and len(models) == len(set(models)), report["loads"]  # each model the language needs, once
