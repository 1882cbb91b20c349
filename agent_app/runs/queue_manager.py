"""The :class:`~agent_app.runs.manager.RunManager` of a shared PostgreSQL database: an accepted run becomes a
procrastinate job, executed by whichever worker takes it (the in-process worker of an app process, or a
``python -m agent_app.worker`` process). Stop from any process reaches the job through procrastinate's abort.

While its job waits, the run's lease is renewed by the process that queued it (a run queued by a process
that died reads as interrupted, and a worker taking its job later leaves it so); a worker claiming the run
takes its lease over (:meth:`~agent_app.runs.run_store.RunStore.mark_running` with its owner).
"""

from __future__ import annotations

import logging

from procrastinate import App
from procrastinate.jobs import Status

from agent_app.runs.execution import HEARTBEAT_SECONDS, LEASE_MS, RunEnd, RunExecution
from agent_app.runs.manager import StoredRunManager
from agent_app.runs.models import Run
from agent_app.runs.queue_tasks import TURN_TASK, queue_app, run_lock
from agent_app.storage.base import Storage

logger = logging.getLogger(__name__)


class QueueRunManager(StoredRunManager):
    """Defers each run as a job; an in-process worker shares its ``execution``."""

    def __init__(self, storage: Storage, execution: RunExecution, app: App) -> None:
        super().__init__(storage, execution)
        self._app = app

    @classmethod
    def open(
        cls,
        storage: Storage,
        database_url: str,
        *,
        lease_ms: int = LEASE_MS,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
    ) -> QueueRunManager:
        """A manager deferring to the queue on ``database_url`` (this process's worker, if any, is its own)."""
        execution = RunExecution(storage, lease_ms=lease_ms, heartbeat_seconds=heartbeat_seconds)
        return cls(storage, execution, queue_app(database_url).open())

    @property
    def app(self) -> App:
        """The queue, opened for deferring and aborting (the transcriptions of this process share it)."""
        return self._app

    def _dispatch(self, run: Run) -> None:
        self.execution.watch_queued(run.id)
        try:
            self._app.configure_task(name=TURN_TASK, lock=run_lock(run.id)).defer(run_id=run.id)
        except Exception:
            logger.exception("Run %s could not be queued", run.id)
            self.execution.end_unexecuted(run, RunEnd("error", "The run could not be queued"))

    def stop(self, run_id: str) -> bool:
        asked = super().stop(run_id)
        if asked:
            self._abort(run_id)
        return asked

    def _abort(self, run_id: str) -> None:
        """Abort the run's job wherever it runs (its worker is notified at once, and polls as a fallback); a
        job no worker took yet is cancelled, and its run ends stopped here."""
        manager = self._app.job_manager
        for job in manager.list_jobs(task=TURN_TASK, lock=run_lock(run_id)):
            if job.id is None or job.status not in (Status.TODO.value, Status.DOING.value):
                continue
            manager.cancel_job_by_id(job.id, abort=True)
            if manager.get_job_status(job.id) == Status.CANCELLED:
                run = self.store.get_run(run_id)
                if run is not None:
                    self.execution.end_unexecuted(run, RunEnd("stopped"))

    def close(self) -> None:
        """Close the queue's connections; this process keeps no lease alive any more."""
        self.execution.close()
        self._app.close()
