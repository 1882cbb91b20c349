"""The page's transcriptions as jobs on the PostgreSQL queue, with real worker processes
(``python -m agent_app.worker``) and the openai transcription backend at the fake server: Stop from this
process ends the transcription in the worker within a second; a worker killed (SIGKILL) mid-transcription
leaves the job to another worker, which finishes it into the shared transcript cache."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_app.media import transcribe_asset
from agent_app.runs.queue_tasks import queue_app
from agent_app.settings import load_settings
from agent_app.storage import PostgresStorage, ProjectMediaLibrary
from agent_app.transcriptions.execution import TranscriptionExecution
from agent_app.transcriptions.queue_manager import QueueTranscriptionManager
from agent_app.types import MediaAsset, ToolEnvironment
from fake_llm import FakeLLMServer, delayed, transcription_reply
from tests.media_samples import make_video
from tests.run_processes import AppProcess, app_process
from tests.run_support import wait_until

WAIT = 30.0
STOP_WITHIN_SECONDS = 1.0


@pytest.fixture
def transcribing(
    postgres_url: str, openai_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[PostgresStorage, QueueTranscriptionManager, MediaAsset]]:
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "openai")
    monkeypatch.setenv("TRANSCRIBE_MODEL", "fake-whisper")
    storage = PostgresStorage(tmp_path / "data", postgres_url)
    project = storage.create_project("p")
    with make_video(tmp_path / "clip.mp4", seconds=2.0).open("rb") as clip:
        asset = storage.import_asset(project.id, "clip.mp4", clip)
    app = queue_app(postgres_url).open()
    manager = QueueTranscriptionManager(TranscriptionExecution(storage, heartbeat_seconds=0.1), app)
    yield storage, manager, asset
    app.close()
    storage.close_pool()


@contextmanager
def worker(postgres_url: str, tmp_path: Path, name: str) -> Iterator[AppProcess]:
    args = ["-m", "agent_app.worker", "--concurrency", "1", "--lease-seconds", "1.5",
            "--heartbeat-seconds", "0.5", "--stalled-seconds", "2"]  # fmt: skip
    env = {"AGENT_DATABASE_URL": postgres_url, "AGENT_DATA_DIR": str(tmp_path / "data")}
    with app_process(args, env, tmp_path, name) as started:
        yield started


def test_stop_from_another_process_ends_a_transcription_in_the_worker_within_a_second(
    transcribing: tuple[PostgresStorage, QueueTranscriptionManager, MediaAsset],
    openai_llm: FakeLLMServer,
    postgres_url: str,
    tmp_path: Path,
) -> None:
    _, manager, asset = transcribing
    openai_llm.transcription.push(delayed(transcription_reply("never heard"), 60.0))
    with worker(postgres_url, tmp_path, "worker"):
        job = manager.start(asset.id, None)
        wait_until(lambda: len(openai_llm.transcription.requests) == 1, WAIT, "the worker never transcribed")
        pressed = time.monotonic()
        assert manager.stop(job.id)
        wait_until(lambda: manager.latest(asset.id).state == "stopped", WAIT)  # type: ignore[union-attr]
        latency = time.monotonic() - pressed
        print(f"cross-process Stop of a transcription: recorded stopped {latency * 1000:.0f} ms after Stop")
        assert latency < STOP_WITHIN_SECONDS


def test_a_worker_killed_mid_transcription_leaves_it_to_another_worker_which_finishes_it(
    transcribing: tuple[PostgresStorage, QueueTranscriptionManager, MediaAsset],
    openai_llm: FakeLLMServer,
    postgres_url: str,
    tmp_path: Path,
) -> None:
    storage, manager, asset = transcribing
    openai_llm.transcription.push(
        delayed(transcription_reply("never heard"), 60.0),
        transcription_reply("the harbour at dawn", segments=[(0.0, 1.5, "the harbour at dawn")]),
    )
    with worker(postgres_url, tmp_path, "first-worker") as first:
        job = manager.start(asset.id, None)
        wait_until(lambda: len(openai_llm.transcription.requests) == 1, WAIT, "the worker never transcribed")
        first.signal(signal.SIGKILL)
        first.process.wait(timeout=WAIT)
    with worker(postgres_url, tmp_path, "second-worker"):
        wait_until(lambda: manager.latest(asset.id).state == "done", 2 * WAIT)  # type: ignore[union-attr]
    done = manager.latest(asset.id)
    assert done is not None and done.id == job.id and done.fraction == 1.0 and done.error is None
    assert len(openai_llm.transcription.requests) == 2
    # The retried job's transcript is in the shared cache: the assistant's tool reads it without a request.
    env = ToolEnvironment(
        media=ProjectMediaLibrary(storage, str(storage.asset_project_id(asset.id))),
        data_dir=storage.data_dir,
        settings=load_settings(),
    )
    transcript, cached = transcribe_asset(env, asset)
    assert cached and transcript.segments[0].text == "the harbour at dawn"
    assert len(openai_llm.transcription.requests) == 2
