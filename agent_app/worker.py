"""``python -m agent_app.worker``: a worker process executing runs and transcriptions from the job queue of
the shared PostgreSQL database (``AGENT_DATABASE_URL``), for deploys that keep the model and the tools off
the web processes (``AGENT_IN_PROCESS_WORKERS=0`` there). SIGINT or SIGTERM stops it once its running jobs
have ended.

Options: ``--concurrency N`` (runs at once, default 4), ``--lease-seconds`` (how long a run of a killed worker
takes to read as interrupted; by default ``AGENT_DB_BUSY_TIMEOUT_MS`` plus two beats and a second, at least 10 s),
``--heartbeat-seconds`` and ``--stalled-seconds`` (the queue's worker heartbeat, and the silence after which a
worker's jobs count as stalled).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys

from agent_app.runs.execution import HEARTBEAT_SECONDS, RunExecution, lease_ms_for
from agent_app.runs.executor import BoundedExecutor
from agent_app.runs.manager import DEFAULT_MAX_RUNS
from agent_app.runs.queue_tasks import QueueRuntime
from agent_app.runs.queue_worker import QueueWorker, WorkerOptions
from agent_app.runs.turn import run_turn
from agent_app.settings import load_settings
from agent_app.storage import StorageError, open_storage
from agent_app.transcriptions.execution import TranscriptionExecution
from agent_app.transcriptions.work import transcribe_stored
from agent_app.ui.resources import current_assistant


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m agent_app.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=DEFAULT_MAX_RUNS, help="runs executed at once")
    parser.add_argument(
        "--lease-seconds", type=float, default=None, help="a run's lease (default: from the busy timeout)"
    )
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0, help="the queue's worker heartbeat")
    parser.add_argument("--stalled-seconds", type=float, default=30.0, help="silence that makes jobs stalled")
    parsed = parser.parse_args(argv)
    if parsed.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if parsed.lease_seconds is not None and parsed.lease_seconds <= 0:
        parser.error("--lease-seconds must be positive")
    return parsed


def main(argv: list[str]) -> int:
    options = _options(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    if settings.database_url is None or settings.problems_with("AGENT_DATABASE_URL"):
        print("The worker needs AGENT_DATABASE_URL (a postgresql:// URL): the queue lives there.", file=sys.stderr)
        return 2
    try:
        storage = open_storage(settings)
    except StorageError as exc:
        print(f"The worker could not open the database: {exc}", file=sys.stderr)
        return 1
    lease_ms = lease_ms_for(settings.db_busy_timeout_ms)
    if options.lease_seconds is not None:
        lease_ms = int(options.lease_seconds * 1000)
    execution = RunExecution(storage, lease_ms=lease_ms, heartbeat_seconds=min(HEARTBEAT_SECONDS, lease_ms / 5000))
    transcriptions = TranscriptionExecution(storage, lease_ms=lease_ms, heartbeat_seconds=min(2.0, lease_ms / 5000))
    runtime = QueueRuntime(
        execution,
        functools.partial(run_turn, storage, current_assistant),
        BoundedExecutor(options.concurrency),
        transcriptions,
        functools.partial(transcribe_stored, storage, load_settings),
    )
    worker = QueueWorker(
        settings.database_url,
        runtime,
        WorkerOptions(
            concurrency=options.concurrency,
            heartbeat_seconds=options.heartbeat_seconds,
            stalled_seconds=options.stalled_seconds,
            install_signal_handlers=True,
        ),
    )
    print(f"worker {execution.owner} ready", flush=True)
    asyncio.run(worker.run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
