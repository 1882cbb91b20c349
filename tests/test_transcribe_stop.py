"""Stop during a real transcription (issue 10, the tool side): a run on the server transcribing minutes of
speech with the offline model is told to stop; the tool answers within a second, although the model works
on one-minute chunks it cannot interrupt, and the chunk in hand is the only work finished afterwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agent_app.media.media_errors import MediaError
from agent_app.media.stoppable import run_stoppable
from agent_app.runs.events import ToolProgressEvent
from agent_app.storage import SqliteStorage
from agent_app.tool_calls import STOPPED_TOOL_ERROR
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import AgentContext, Cancellation, ChatMessage, StopRequested
from fake_llm import FakeLLMServer, openai_text, openai_tool_calls, tool_call
from tests.run_support import manager_for
from testsupport.media_factory import AUDIO_RATE, MediaFile, speech_track

SPEECH_MINUTES = 5
WAIT = 40.0


def _long_talk(path: Path) -> Path:
    """Minutes of real (synthesized) speech as a FLAC file: one sentence list said over and over."""
    speech, _ = speech_track()
    repeats = int(np.ceil(SPEECH_MINUTES * 60 * AUDIO_RATE / len(speech)))
    return MediaFile(np.tile(speech, repeats)[None, :], AUDIO_RATE, codec="flac").write(path)


def _transcription_workers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "transcription-worker"]


@pytest.mark.slow
def test_stop_ends_a_running_transcription_within_a_second(  # offline first: it clears LLM_* too
    offline_transcription: pytest.MonkeyPatch, openai_llm: FakeLLMServer, storage: SqliteStorage, tmp_path: Path
) -> None:
    project = storage.create_project("Talks")
    with _long_talk(tmp_path / "talk.flac").open("rb") as handle:
        asset = storage.import_asset(project.id, "talk.flac", handle)
    chat = storage.create_conversation(project.id).id
    registry = build_tool_registry(["transcribe_video"])
    manager = manager_for(storage, registry)
    openai_llm.chat.push(openai_tool_calls(tool_call("transcribe_video", {}, id="call_t")), openai_text("Stopped."))

    context = AgentContext(project_id=project.id, media_assets=[asset], active_asset_id=asset.id)
    run = manager.start(chat, context, ChatMessage(role="user", content="What is said?"))
    deadline = time.monotonic() + WAIT
    while not any(
        isinstance(event.data, ToolProgressEvent) and event.data.message.startswith("Transcribing")
        for event in manager.events(run.id)
    ):
        assert time.monotonic() < deadline, f"the transcription never started: {manager.events(run.id)[-5:]}"
        time.sleep(0.02)
    time.sleep(0.5)  # well inside the first one-minute chunk: the model call in hand cannot be interrupted
    pressed = time.monotonic()
    assert manager.stop(run.id)
    while (current := manager.get(run.id)) is not None and current.active:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stopped_after = time.monotonic() - pressed
    assert stopped_after < 1.0, f"the tool answered Stop after {stopped_after:.2f} s"
    assert current is not None and current.state == "stopped"
    results = [m.tool_result for m in storage.load_messages(chat) if m.tool_result is not None]
    assert [(r.name, r.error) for r in results] == [("transcribe_video", STOPPED_TOOL_ERROR)]
    # The worker finishes only the chunk in hand, then ends: nothing transcribes on for minutes.
    while _transcription_workers():
        assert time.monotonic() - pressed < 30.0, "the transcription went on in the background"
        time.sleep(0.05)


def test_progress_reaches_the_caller_in_its_own_thread_and_failures_are_raised_there() -> None:
    caller = threading.current_thread()
    seen: list[tuple[float, bool]] = []

    def work(progress: Callable[[float], None]) -> str:
        progress(0.5)
        progress(1.0)
        return "done"

    def on_progress(fraction: float) -> None:
        seen.append((fraction, threading.current_thread() is caller))

    assert run_stoppable(work, on_progress, Cancellation()) == "done"
    assert seen == [(0.5, True), (1.0, True)]

    def failing(progress: Callable[[float], None]) -> str:
        raise MediaError("the file is damaged")

    with pytest.raises(MediaError, match="damaged"):
        run_stoppable(failing, on_progress, Cancellation())


def test_a_stopped_worker_ends_at_its_next_progress_report() -> None:
    reports: list[float] = []
    ended = threading.Event()

    def work(progress: Callable[[float], None]) -> None:
        try:
            for step in range(1000):
                time.sleep(0.01)
                progress(step / 1000)
                reports.append(step / 1000)
        finally:
            ended.set()

    pressed = time.monotonic() + 0.2
    stop = Cancellation()
    threading.Timer(0.2, stop.set).start()
    with pytest.raises(StopRequested):
        run_stoppable(work, lambda fraction: None, stop)
    assert time.monotonic() - pressed < 0.5
    assert ended.wait(1.0) and len(reports) < 100
