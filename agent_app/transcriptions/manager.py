"""Starting, stopping and reading the page's transcription jobs: :class:`TranscriptionManager` is the
interface; :class:`ThreadTranscriptionManager` executes on this process's executor (SQLite), and
:class:`QueueTranscriptionManager` defers to the job queue (PostgreSQL), where Stop is the queue's abort and
a job whose worker died is taken up again by another worker."""

from __future__ import annotations

import logging
from typing import Protocol

from procrastinate import App
from procrastinate.jobs import Status

from agent_app.runs.executor import BoundedExecutor
from agent_app.runs.queue_tasks import TRANSCRIBE_TASK, transcription_lock
from agent_app.transcriptions.execution import TranscriptionExecution, TranscriptionWork
from agent_app.transcriptions.models import Transcription
from agent_app.types import now_ms

logger = logging.getLogger(__name__)

DEFAULT_MAX_TRANSCRIPTIONS = 2
"""Transcriptions at once in one process: each keeps a core busy."""


class TranscriptionManager(Protocol):
    def start(self, asset_id: str, language: str | None) -> Transcription:
        """Queue a transcription of the asset; :class:`TranscriptionBusyError` while one goes."""
        ...

    def stop(self, transcription_id: str) -> bool: ...

    def latest(self, asset_id: str) -> Transcription | None: ...


class _StoredTranscriptions:
    def __init__(self, execution: TranscriptionExecution) -> None:
        self.execution = execution
        self.store = execution.store

    def start(self, asset_id: str, language: str | None) -> Transcription:
        job = self.store.create(
            asset_id, language, owner=self.execution.owner, lease_until=now_ms() + self.execution.lease_ms
        )
        self._dispatch(job)
        return job

    def stop(self, transcription_id: str) -> bool:
        asked = self.store.request_stop(transcription_id)
        self.execution.cancel(transcription_id)
        return asked

    def latest(self, asset_id: str) -> Transcription | None:
        return self.store.latest(asset_id)

    def _dispatch(self, job: Transcription) -> None:
        raise NotImplementedError


class ThreadTranscriptionManager(_StoredTranscriptions):
    """Transcriptions on a bounded executor of this process (SQLite)."""

    def __init__(
        self, execution: TranscriptionExecution, work: TranscriptionWork, max_workers: int = DEFAULT_MAX_TRANSCRIPTIONS
    ) -> None:
        super().__init__(execution)
        self._work = work
        self._executor = BoundedExecutor(max_workers)

    def _dispatch(self, job: Transcription) -> None:
        stop = self.execution.track(job.id)
        self._executor.submit(lambda: self.execution.execute(job, self._work, stop))


class QueueTranscriptionManager(_StoredTranscriptions):
    """Transcriptions as jobs on the shared database's queue (whichever worker takes them)."""

    def __init__(self, execution: TranscriptionExecution, app: App) -> None:
        super().__init__(execution)
        self._app = app

    def _dispatch(self, job: Transcription) -> None:
        self.execution.watch_queued(job.id)
        try:
            self._app.configure_task(name=TRANSCRIBE_TASK, lock=transcription_lock(job.id)).defer(
                transcription_id=job.id
            )
        except Exception:
            logger.exception("Transcription %s could not be queued", job.id)
            self.execution.forget_queued(job.id)
            self.store.finish(job.id, None, "error", "The transcription could not be queued")

    def stop(self, transcription_id: str) -> bool:
        asked = super().stop(transcription_id)
        manager = self._app.job_manager
        for queued in manager.list_jobs(task=TRANSCRIBE_TASK, lock=transcription_lock(transcription_id)):
            if queued.id is None or queued.status not in (Status.TODO.value, Status.DOING.value):
                continue
            manager.cancel_job_by_id(queued.id, abort=True)
            if manager.get_job_status(queued.id) == Status.CANCELLED:
                self.execution.forget_queued(transcription_id)
                self.store.finish(transcription_id, None, "stopped", None)
        return asked
