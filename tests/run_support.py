"""Helpers for the tests of runs on the server: a run manager that drives the real turn, and waiting
for what a run does (runs go on in threads of their own, so tests poll with a deadline)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from agent_app.chat_handler import ChatHandler
from agent_app.registry import ToolRegistry
from agent_app.runs.manager import DEFAULT_MAX_RUNS, ThreadRunManager
from agent_app.runs.models import Run
from agent_app.runs.turn import Assistant, run_turn
from agent_app.settings import load_settings
from agent_app.storage import Storage


def wait_until(condition: Callable[[], object], timeout: float, what: str = "timed out") -> None:
    """Poll ``condition`` until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def manager_for(storage: Storage, registry: ToolRegistry, max_workers: int = DEFAULT_MAX_RUNS) -> ThreadRunManager:
    """A run manager whose runs are the page's real turn (assistant, in-process client, ``registry``)."""
    settings = load_settings()
    assistant = Assistant(ChatHandler(settings, registry.to_tool_schemas()), registry, settings)
    job = functools.partial(run_turn, storage, lambda: assistant)
    return ThreadRunManager(storage, job, max_workers=max_workers, heartbeat_seconds=0.1)


def finished(manager: ThreadRunManager, run: Run, timeout: float) -> Run:
    """``run`` once it is over."""
    wait_until(lambda: not _current(manager, run).active, timeout, f"run still {_current(manager, run).state}")
    return _current(manager, run)


def _current(manager: ThreadRunManager, run: Run) -> Run:
    current = manager.get(run.id)
    assert current is not None
    return current
