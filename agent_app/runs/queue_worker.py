"""A procrastinate worker executing runs: the whole process (``python -m agent_app.worker``) or a thread of an
app process (the in-process worker, on by default with PostgreSQL: ``AGENT_IN_PROCESS_WORKERS``).

Besides procrastinate's own loop it sweeps stalled jobs (their worker stopped sending heartbeats: killed,
machine lost): an agent turn's job is marked failed, never retried (its run reads as interrupted once its
lease ends, and the page offers Retry); a transcription's job is queued again, and the worker taking it
claims the transcription once the dead worker's lease has run out (the transcript cache keeps what was done).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass

from procrastinate import App
from procrastinate.jobs import Status

from agent_app.runs.queue_tasks import RUNTIME_KEY, TRANSCRIBE_TASK, TURN_TASK, QueueRuntime, queue_app

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker runs. ``poll_seconds``: the fallback polling for new jobs and aborts (LISTEN/NOTIFY
    wakes the worker at once); ``heartbeat_seconds`` and ``stalled_seconds``: procrastinate's worker
    heartbeat, and how long without one makes a worker's jobs stalled."""

    concurrency: int
    name: str = "agent-worker"
    poll_seconds: float = 5.0
    heartbeat_seconds: float = 10.0
    stalled_seconds: float = 30.0
    install_signal_handlers: bool = False


class QueueWorker:
    """One procrastinate worker on ``database_url`` executing jobs with ``runtime`` (its executor's threads
    bound how many at once: ``options.concurrency`` should match)."""

    def __init__(self, database_url: str, runtime: QueueRuntime, options: WorkerOptions) -> None:
        self.options = options
        self._app: App = queue_app(database_url, max_connections=options.concurrency + 3)
        self._runtime = runtime
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    async def run(self) -> None:
        """Work until cancelled (or, with signal handlers, until SIGINT/SIGTERM): jobs running then finish."""
        async with self._app.open_async():
            sweeper = asyncio.create_task(self._sweep_stalled())
            try:
                await self._app.run_worker_async(
                    name=self.options.name,
                    concurrency=self.options.concurrency,
                    fetch_job_polling_interval=self.options.poll_seconds,
                    abort_job_polling_interval=self.options.poll_seconds,
                    update_heartbeat_interval=self.options.heartbeat_seconds,
                    stalled_worker_timeout=self.options.stalled_seconds,
                    install_signal_handlers=self.options.install_signal_handlers,
                    additional_context={RUNTIME_KEY: self._runtime},
                    delete_jobs="successful",
                )
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper

    async def _sweep_stalled(self) -> None:
        manager = self._app.job_manager
        while True:
            await asyncio.sleep(self.options.heartbeat_seconds)
            try:
                stalled = await manager.get_stalled_jobs(seconds_since_heartbeat=self.options.stalled_seconds)
                for job in stalled:
                    if job.id is None:
                        continue
                    if job.task_name == TURN_TASK:
                        logger.warning("Turn job %s stalled (its worker is gone): failed, not retried", job.id)
                        await manager.finish_job_by_id_async(job.id, status=Status.FAILED, delete_job=False)
                    elif job.task_name == TRANSCRIBE_TASK:
                        logger.warning("Transcription job %s stalled (its worker is gone): queued again", job.id)
                        await manager.retry_job(job)
            except Exception:
                logger.warning("Could not sweep stalled jobs", exc_info=True)

    # --- as a thread of an app process ------------------------------------------------------
    def start_in_thread(self) -> None:
        """Run on a daemon thread with its own event loop (the app process's in-process worker)."""
        self._thread = threading.Thread(target=self._thread_main, name="agent-queue-worker", daemon=True)
        self._thread.start()
        self._started.wait()

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self.run())
            self._started.set()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(self._task)
        except Exception:
            logger.exception("The in-process queue worker stopped")
        finally:
            self._started.set()
            loop.close()

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread's worker: the jobs running finish first (their runs end as they would)."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)
        self._runtime.executor.close()
