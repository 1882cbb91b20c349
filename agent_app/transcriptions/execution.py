"""Executing a transcription job in this process, wherever it was queued: claim it, transcribe with progress
written to storage (fenced by the job's lease, like a run's writes), record how it ended, honour Stop; a
heartbeat renews the leases of this process's jobs and picks up Stops other processes wrote."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from agent_app.cancellation import Cancellation, StopRequested
from agent_app.media.transcriber import TranscriptionError
from agent_app.runs.execution import HEARTBEAT_SECONDS, LEASE_MS
from agent_app.runs.models import LeaseLostError
from agent_app.storage.base import Storage
from agent_app.transcriptions.models import Transcription, TranscriptionState
from agent_app.types import new_id, now_ms

logger = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 0.25
"""The fewest seconds between two progress writes of one job (the last one always goes in)."""


class TranscriptionControl:
    """What a transcription job may do: report progress (to storage, fenced) and see its Stop."""

    def __init__(self, job: Transcription, execution: TranscriptionExecution, cancellation: Cancellation) -> None:
        self.job = job
        self.cancellation = cancellation
        self.lost = False
        self._execution = execution
        self._written = 0.0

    def report(self, fraction: float, message: str) -> None:
        """Progress for every reader; a busy database skips a report, a lost lease stops the job."""
        if self.lost:
            raise StopRequested
        now = time.monotonic()
        if now - self._written < PROGRESS_EVERY_SECONDS and fraction < 1.0:
            return
        self._written = now
        try:
            self._execution.store.progress(self.job.id, self._execution.owner, fraction, message)
        except LeaseLostError:
            logger.warning("Transcription %s lost its lease; it stops and writes nothing more", self.job.id)
            self.lost = True
            self.cancellation.set()
            raise StopRequested from None
        except Exception:
            logger.warning("Transcription %s: could not record its progress", self.job.id, exc_info=True)


TranscriptionWork = Callable[[Transcription, TranscriptionControl], None]
"""The work of one job (see :func:`agent_app.transcriptions.work.transcribe_stored`); raises to fail."""


class TranscriptionExecution:
    """This process's transcription jobs, their Stops and leases: one per storage per process."""

    def __init__(
        self, storage: Storage, *, lease_ms: int = LEASE_MS, heartbeat_seconds: float = HEARTBEAT_SECONDS
    ) -> None:
        self.storage = storage
        self.store = storage.transcription_store()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self.lease_ms = lease_ms
        self._heartbeat_seconds = heartbeat_seconds
        self._stops: dict[str, Cancellation] = {}
        self._queued: set[str] = set()
        self._guard = threading.Lock()
        self._heartbeat: threading.Thread | None = None
        self._closed = False

    def track(self, job_id: str) -> Cancellation:
        stop = Cancellation()
        with self._guard:
            self._stops[job_id] = stop
            self._ensure_heartbeat()
        return stop

    def watch_queued(self, job_id: str) -> None:
        with self._guard:
            self._queued.add(job_id)
            self._ensure_heartbeat()

    def forget_queued(self, job_id: str) -> None:
        with self._guard:
            self._queued.discard(job_id)

    def cancel(self, job_id: str) -> None:
        with self._guard:
            stop = self._stops.get(job_id)
        if stop is not None:
            stop.set()

    def execute(self, job: Transcription, work: TranscriptionWork, stop: Cancellation) -> None:
        """Claim ``job`` (waiting out the lease of a worker that died with it), do ``work``, record the end."""
        try:
            if not self._claim(job, stop):
                if stop.is_set():
                    self.store.finish(job.id, None, "stopped", None)  # stopped before anyone took it
                return
            self.forget_queued(job.id)
            control = TranscriptionControl(job, self, stop)
            state: TranscriptionState = "done"
            error: str | None = None
            try:
                work(job, control)
            except StopRequested:
                state = "stopped"
            except TranscriptionError as exc:
                state, error = "error", str(exc)
            except Exception as exc:  # the job must end in a state, whatever the work did
                logger.exception("Transcription %s failed", job.id)
                state, error = "error", f"Internal error: {type(exc).__name__}"
            if stop.is_set() and state == "error":
                state, error = "stopped", None
            if not control.lost:
                self._finish(job, state, error)
        finally:
            with self._guard:
                self._stops.pop(job.id, None)
            self.storage.close()

    def _claim(self, job: Transcription, stop: Cancellation) -> bool:
        while not stop.is_set():
            if self.store.claim(job.id, owner=self.owner, lease_until=now_ms() + self.lease_ms):
                return True
            current = self.store.get(job.id)
            if current is None or not current.active or current.stop_requested:
                return False
            # Another worker's lease, not run out yet (the queue found that worker stalled first): wait for it.
            stop.wait(max(0.01, min(1.0, (current.lease_until - now_ms() + 1) / 1000)))
        return False

    def _finish(self, job: Transcription, state: TranscriptionState, error: str | None) -> None:
        try:
            self.store.finish(job.id, self.owner, state, error)
        except Exception:  # its lease runs out: readers see it interrupted, and Transcribe starts it again
            logger.warning("Transcription %s: could not record how it ended (%s)", job.id, state, exc_info=True)

    def _ensure_heartbeat(self) -> None:
        """Called with the guard held."""
        if self._heartbeat is None or not self._heartbeat.is_alive():
            self._heartbeat = threading.Thread(target=self._beat, name="agent-transcription-heartbeat", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        while True:
            with self._guard:
                if self._closed or not (self._stops or self._queued):
                    self._heartbeat = None
                    return
            try:
                renewed = self.store.renew(self.owner, now_ms() + self.lease_ms)
                for job_id in self.store.stop_requested(self.owner):
                    self.cancel(job_id)
                self._forget_taken(renewed)
            except Exception as exc:  # noqa: BLE001 - logged in a line: a busy or lost database, tried again
                logger.warning("Could not renew the transcriptions' leases: %s", exc)
            finally:
                self.storage.close()
            time.sleep(self._heartbeat_seconds)

    def _forget_taken(self, renewed: int) -> None:
        """Queued jobs a worker claimed (or that ended) are no longer this process's to keep alive."""
        with self._guard:
            queued = list(self._queued)
            held = len(self._stops) + len(queued)
        if renewed >= held:
            return
        for job_id in queued:
            job = self.store.get(job_id)
            if job is None or not job.active or job.owner != self.owner:
                self.forget_queued(job_id)

    def close(self) -> None:
        """Keep no lease alive any more (a process, or a test, done with its jobs)."""
        with self._guard:
            self._closed = True
