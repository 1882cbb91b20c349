"""The job queue's side of a run: procrastinate (PostgreSQL only) holds each accepted run as a job; a worker
executes it through the same :class:`~agent_app.runs.execution.RunExecution` as the thread executor.

Why procrastinate: its queue lives in the PostgreSQL the app already shares (its schema is our migration 4),
it runs sync and async tasks, aborts a running job (LISTEN/NOTIFY, with polling as the fallback), ships a
worker and tells stalled workers by their heartbeat. An agent turn is never retried by the queue: a re-run
would repeat model calls and tool effects, so its task has no retry and a stalled turn job is marked failed
(:mod:`agent_app.runs.queue_worker`); the run's own lease tells the page it was interrupted, and Retry is
the user's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from procrastinate import App, PsycopgConnector
from procrastinate.job_context import JobContext

from agent_app.cancellation import Cancellation
from agent_app.runs.execution import RunExecution, RunJob
from agent_app.runs.executor import BoundedExecutor
from agent_app.transcriptions.execution import TranscriptionExecution, TranscriptionWork

logger = logging.getLogger(__name__)

TURN_TASK = "agent_turn"
"""The task name of an agent turn: stored with each job, so it never changes."""
TRANSCRIBE_TASK = "transcribe_asset"
"""The task name of a page's transcription: retried on another worker when its worker stalls."""
RUNTIME_KEY = "agent_runtime"
"""Where a task finds its process's :class:`QueueRuntime` in the job's context."""


POOL_WAIT_SECONDS = 10.0
"""How long the queue waits for a pooled connection before its call fails (a server gone for good)."""


def run_lock(run_id: str) -> str:
    """The procrastinate lock of a run's job: how any process finds the job of a run (to abort it)."""
    return f"run:{run_id}"


def transcription_lock(transcription_id: str) -> str:
    return f"transcription:{transcription_id}"


def queue_app(database_url: str, *, max_connections: int = 4) -> App:
    """A procrastinate app on the shared database (psycopg 3), with the run task registered."""
    connector = PsycopgConnector(conninfo=database_url, min_size=1, max_size=max_connections, timeout=POOL_WAIT_SECONDS)
    app = App(connector=connector)
    app.task(name=TURN_TASK, pass_context=True, retry=False)(agent_turn)
    app.task(name=TRANSCRIBE_TASK, pass_context=True, retry=False)(transcribe)
    return app


@dataclass(frozen=True)
class QueueRuntime:
    """What a worker process executes jobs with: its executions (shared with the process's managers when the
    worker runs in an app process), the run job and the transcription work, and the threads they run on."""

    execution: RunExecution
    job: RunJob
    executor: BoundedExecutor
    transcriptions: TranscriptionExecution
    transcribe: TranscriptionWork


async def agent_turn(context: JobContext, run_id: str) -> None:
    """Execute the run ``run_id`` on one of the runtime's threads. Procrastinate's abort (a Stop from any
    process) cancels this coroutine: the run's :class:`~agent_app.cancellation.Cancellation` is set, and the
    job ends once the run has recorded how it ended."""
    runtime: QueueRuntime = context.additional_context[RUNTIME_KEY]
    execution = runtime.execution
    run = await asyncio.to_thread(execution.store.get_run, run_id)
    if run is None or not run.active:  # deleted, or interrupted before a worker took it
        return
    stop = execution.track(run.id)
    await _on_thread(runtime.executor, lambda: execution.execute(run, runtime.job, stop), stop)


async def transcribe(context: JobContext, transcription_id: str) -> None:
    """Execute the transcription job ``transcription_id`` on one of the runtime's threads; aborted like a turn."""
    runtime: QueueRuntime = context.additional_context[RUNTIME_KEY]
    execution = runtime.transcriptions
    job = await asyncio.to_thread(execution.store.get, transcription_id)
    if job is None or job.state in ("done", "error", "stopped"):
        return
    stop = execution.track(job.id)
    await _on_thread(runtime.executor, lambda: execution.execute(job, runtime.transcribe, stop), stop)


async def _on_thread(executor: BoundedExecutor, work: Callable[[], None], stop: Cancellation) -> None:
    """``work`` on ``executor``, awaited; a cancelled wait (the queue's abort, a worker shutting down) sets
    ``stop`` and still waits for the work to record how it ended."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            work()
        finally:
            try:
                loop.call_soon_threadsafe(finished)
            except RuntimeError:  # the worker's loop is gone (the process is ending)
                logger.warning("A job ended after its worker's loop")

    executor.submit(run)
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        stop.set()
        await done
        raise
