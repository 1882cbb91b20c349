"""The page's transcriptions as jobs on the shared PostgreSQL database's queue (procrastinate): whichever
worker takes a job executes it; Stop is the queue's abort; a job whose worker died is queued again by the
worker sweep (:mod:`agent_app.runs.queue_worker`)."""

from __future__ import annotations

import logging

from procrastinate import App
from procrastinate.jobs import Status

from agent_app.runs.queue_tasks import TRANSCRIBE_TASK, transcription_lock
from agent_app.transcriptions.execution import TranscriptionExecution
from agent_app.transcriptions.manager import StoredTranscriptions
from agent_app.transcriptions.models import Transcription

logger = logging.getLogger(__name__)


class QueueTranscriptionManager(StoredTranscriptions):
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
