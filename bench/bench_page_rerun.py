"""How the page's rerun time grows with the conversation: AppTest reruns at 10, 100 and 1,000 stored
messages, as ratios against the 10-message run measured in the same process (target: 1,000 ≤ 5x).

Why it stays flat: a conversation is read from storage once, when it is opened; a rerun draws only
the last page of it (``agent_app.ui.chat_history.PAGE_SIZE`` messages, "Show older" for the rest).
Every fourth assistant turn carries a tool call and its result, as a real session would.

Run: ``.venv/bin/python -m bench.bench_page_rerun`` (about half a minute).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, ToolCall, ToolResult

ROOT = Path(__file__).resolve().parent.parent
PAGE_SCRIPT = ROOT / "agent_app" / "ui" / "page_script.py"
SIZES = (10, 100, 1000)
TARGET_RATIO = 5.0


def conversation(count: int) -> list[ChatMessage]:
    """``count`` messages: user questions, assistant answers, some tool calls with results."""
    messages: list[ChatMessage] = []
    turn = 0
    while len(messages) < count:
        messages.append(ChatMessage(role="user", content=f"Question {turn}: what is said around {turn}:00?"))
        if turn % 4 == 3:
            call = ToolCall(id=f"call_{turn}", name="transcribe_video", args={"startMs": turn * 1000})
            messages.append(ChatMessage(role="assistant", tool_calls=[call]))
            result = ToolResult(
                tool_call_id=call.id,
                name=call.name,
                result={"text": "words " * 40, "segments": [{"startMs": 0, "endMs": 900, "text": "words"}]},
                duration_ms=420,
            )
            messages.append(ChatMessage(role="tool", content="transcribe_video finished in 0.4 s", tool_result=result))
        messages.append(ChatMessage(role="assistant", content=f"Answer {turn}: **they talk** about the harbour. " * 3))
        turn += 1
    return messages[:count]


def seed(data_dir: Path, count: int) -> dict[str, str]:
    storage = SqliteStorage(data_dir)
    project = storage.create_project(f"{count} messages")
    chat = storage.create_conversation(project.id)
    for message in conversation(count):
        storage.append_message(chat.id, message)
    storage.close()
    return {"project": project.id, "chat": chat.id}


def rerun_seconds(params: dict[str, str], reruns: int) -> tuple[float, float]:
    """(first run, median rerun) of a fresh session opened at ``params``."""
    at = AppTest.from_file(str(PAGE_SCRIPT), default_timeout=120)
    at.query_params.update(params)
    started = time.perf_counter()
    at.run()
    first = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(f"the page failed: {[e.value for e in at.exception]}")
    timings = []
    for _ in range(reruns):
        started = time.perf_counter()
        at.run()
        timings.append(time.perf_counter() - started)
    return first, statistics.median(timings)


def compare_reruns(
    seed_one: Callable[[Path, int], dict[str, str]], sizes: Sequence[int], unit: str, target: float, reruns: int
) -> None:
    """Seed a session per size, time its first run and reruns, and print each against the smallest size
    (the baseline, measured in the same process) with the verdict on the largest."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        os.environ["AGENT_DATA_DIR"] = str(data_dir)
        sessions = {size: seed_one(data_dir, size) for size in sizes}
        rerun_seconds(sessions[sizes[0]], 2)  # warm imports and caches before measuring anything
        results = {size: rerun_seconds(sessions[size], reruns) for size in sizes}
    base_first, base_rerun = results[sizes[0]]
    print(f"page rerun time by {unit} count (AppTest, median of {reruns}), ratios vs {sizes[0]} {unit}s")
    print(f"{unit + 's':>9} {'open (ms)':>10} {'x':>6} {'rerun (ms)':>11} {'x':>6}")
    for size, (first, rerun) in results.items():
        opened = f"{first * 1000:>10.1f} {first / base_first:>6.2f}"
        print(f"{size:>9} {opened} {rerun * 1000:>11.1f} {rerun / base_rerun:>6.2f}")
    ratio = results[sizes[-1]][1] / base_rerun
    verdict = "within" if ratio <= target else "OVER"
    print(f"target: {sizes[-1]}-{unit} rerun ≤ {target:g}x the {sizes[0]}-{unit} one: {ratio:.2f}x, {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reruns", type=int, default=15, help="timed reruns per size (median reported)")
    compare_reruns(seed, SIZES, "message", TARGET_RATIO, parser.parse_args().reruns)


if __name__ == "__main__":
    main()
