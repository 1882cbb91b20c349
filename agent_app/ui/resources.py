"""Process-wide objects the page shares between sessions and with the routes.

Storage (:func:`agent_app.storage.open_storage`, one instance per ``AGENT_DATA_DIR``) and the tool
registry (:func:`agent_app.tool_plugins.enabled_tool_registry`, built once per setting) are the ones the
routes use, so a changed setting takes effect without a restart. The run manager of a storage owns the
executor every session's runs go to; a run reads the settings (model, tools) when it starts.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_app.chat_handler import ChatHandler
from agent_app.runs.executor import BoundedExecutor
from agent_app.runs.manager import RunManager, StoredRunManager, ThreadRunManager, lease_ms_for
from agent_app.runs.turn import Assistant, run_turn
from agent_app.settings import Settings, load_settings
from agent_app.storage import Storage, open_storage
from agent_app.tool_plugins import usable_tool_registry
from agent_app.transcriptions.execution import TranscriptionExecution
from agent_app.transcriptions.manager import StoredTranscriptions, ThreadTranscriptionManager, TranscriptionManager
from agent_app.transcriptions.work import transcribe_stored

if TYPE_CHECKING:
    from agent_app.runs.queue_worker import QueueWorker


def current_assistant() -> Assistant:
    """What a starting run works with: the settings now (read here, once per run, and passed down), the chat
    handler called in-process, offering the enabled tools (none when they are misconfigured: the sidebar says
    why, and the model can still answer)."""
    settings = load_settings()
    registry, _ = usable_tool_registry(settings.enabled_tools)
    return Assistant(ChatHandler(settings, registry.to_tool_schemas()), registry, settings)


@dataclass
class _ProcessJobs:
    """A storage's runs and transcriptions in this process, and its in-process queue worker (if any)."""

    runs: StoredRunManager
    transcriptions: StoredTranscriptions
    worker: QueueWorker | None = None

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()  # its running jobs finish first
        self.transcriptions.close()
        self.runs.close()


_jobs: dict[Storage, _ProcessJobs] = {}
_jobs_lock = threading.Lock()


def _jobs_for(settings: Settings) -> _ProcessJobs:
    storage = open_storage(settings)
    with _jobs_lock:
        jobs = _jobs.get(storage)
        if jobs is None:
            jobs = _jobs[storage] = _new_jobs(settings, storage)
        return jobs


def get_run_manager(settings: Settings) -> RunManager:
    """The runs of the storage the settings name (one manager per storage, shared by sessions): on the
    thread executor with SQLite, on the job queue with PostgreSQL (and this process's worker, unless
    ``AGENT_IN_PROCESS_WORKERS`` is 0)."""
    return _jobs_for(settings).runs


def get_transcription_manager(settings: Settings) -> TranscriptionManager:
    """The page's transcription jobs of the storage the settings name, executed like its runs."""
    return _jobs_for(settings).transcriptions


def _new_jobs(settings: Settings, storage: Storage) -> _ProcessJobs:
    job = functools.partial(run_turn, storage, current_assistant)
    work = functools.partial(transcribe_stored, storage, load_settings)
    lease_ms = lease_ms_for(settings.db_busy_timeout_ms)
    transcribing = TranscriptionExecution(storage, lease_ms=lease_ms)
    if settings.database_url is None:
        return _ProcessJobs(
            ThreadRunManager(storage, job, lease_ms=lease_ms), ThreadTranscriptionManager(transcribing, work)
        )
    # procrastinate only where PostgreSQL is
    from agent_app.runs.queue_manager import QueueRunManager
    from agent_app.runs.queue_tasks import QueueRuntime
    from agent_app.runs.queue_worker import QueueWorker, WorkerOptions
    from agent_app.transcriptions.queue_manager import QueueTranscriptionManager

    runs = QueueRunManager.open(storage, settings.database_url, lease_ms=lease_ms)
    worker = None
    if settings.in_process_workers > 0:
        count = settings.in_process_workers
        runtime = QueueRuntime(runs.execution, job, BoundedExecutor(count), transcribing, work)
        worker = QueueWorker(settings.database_url, runtime, WorkerOptions(concurrency=count, name="agent-in-process"))
        worker.start_in_thread()
    return _ProcessJobs(runs, QueueTranscriptionManager(transcribing, runs.app), worker)


def close_run_managers() -> None:
    """Close and forget every storage's run and transcription managers and in-process worker (a process, or a
    test, done with its jobs): their workers end once their jobs are done, and the next
    :func:`get_run_manager` makes new ones."""
    with _jobs_lock:
        jobs = list(_jobs.values())
        _jobs.clear()
    for each in jobs:
        each.close()
