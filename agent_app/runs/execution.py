"""Executing a run in this process, wherever it was started: the one path for the thread executor and the
queue worker alike (claim the run, do the job, keep what it could not store, record its end, honour Stop).

A run's writes are fenced: each goes through the run store with this process's ``owner``, and storage
refuses it (:class:`~agent_app.runs.models.LeaseLostError`) once the run is no longer this owner's with a
live lease, so a process paused past its lease (another process marked the run interrupted, Retry started
a new one) writes nothing more when it resumes: the run stops itself instead.

Liveness is a lease: while a run of this process is queued, running, or ended with its end not yet
recorded (a busy database), the heartbeat pushes ``lease_until`` forward every ``heartbeat_seconds``. The
lease outlives the database's busy timeout (:func:`lease_ms_for`) and a renewal the database refused is
tried again at once, so a held lock reads as a busy database, never as a dead server; a process that stops
or is killed stops renewing, and once the lease ends every reader treats the run as interrupted.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent_app.cancellation import Cancellation
from agent_app.errors import ErrorKind
from agent_app.runs.events import RunEventData
from agent_app.runs.models import LeaseLostError, Run, RunState
from agent_app.storage.base import Storage
from agent_app.types import ChatMessage, new_id, now_ms

logger = logging.getLogger(__name__)

LEASE_MS = 10_000
"""The shortest lease: how long a run counts as alive without its process renewing it."""
HEARTBEAT_SECONDS = 2.0
"""How often a process renews its runs' leases and looks for Stops written by other processes."""


def lease_ms_for(busy_timeout_ms: int, heartbeat_seconds: float = HEARTBEAT_SECONDS) -> int:
    """A lease that outlives the busy timeout by two beats and a second: a renewal that waited out the busy
    timeout and failed is tried again at once, and goes in as the lock goes, before the lease ends."""
    return max(LEASE_MS, busy_timeout_ms + int(2_000 * heartbeat_seconds) + 1_000)


@dataclass(frozen=True)
class RunEnd:
    """How a job ended: ``answered``, ``error`` (with a message safe to show, and its kind) or ``stopped``.
    ``unsaved``: messages the job could not store (a busy, full or read-only database), oldest first."""

    state: RunState
    error: str | None = None
    error_kind: ErrorKind | None = None
    unsaved: tuple[ChatMessage, ...] = ()


class RunControl:
    """What a running job may do with its run: record events and messages (fenced by its lease), and its
    Stop (``cancellation``, also set when the run lost its lease)."""

    def __init__(self, run: Run, execution: RunExecution, cancellation: Cancellation) -> None:
        self.run = run
        self.cancellation = cancellation
        self.lost = False
        """Whether storage refused a write because the run is no longer this process's."""
        self._execution = execution

    def emit(self, event: RunEventData) -> None:
        """Record an event; a failed write (a busy database) is logged and the run goes on."""
        try:
            self._execution.store.append_event(self.run.id, event, owner=self._execution.owner)
        except LeaseLostError:
            self.lose()
        except Exception:
            logger.warning("Run %s: could not record a %s event", self.run.id, event.kind, exc_info=True)

    def persistence(self) -> RunPersistence:
        """The chat store hook writing the run's messages, fenced like its events."""
        return RunPersistence(self, self._execution)

    def lose(self) -> None:
        """The run is no longer this process's: it stops, and nothing of it is written or kept."""
        if not self.lost:
            logger.warning("Run %s lost its lease; it stops and writes nothing more", self.run.id)
        self.lost = True
        self.cancellation.set()


class RunPersistence:
    """Writes a run's messages as the chat store appends them, only while the run holds its lease (satisfies
    :class:`agent_app.session_stores.ChatPersistence`)."""

    def __init__(self, control: RunControl, execution: RunExecution) -> None:
        self._control = control
        self._execution = execution

    def message_added(self, message: ChatMessage) -> None:
        run = self._control.run
        try:
            self._execution.store.append_run_message(run.id, self._execution.owner, run.conversation_id, message)
        except LeaseLostError:
            self._control.lose()
            raise

    def messages_cleared(self) -> None:
        raise RuntimeError("A run never clears its conversation")


RunJob = Callable[[Run, RunControl], RunEnd]
"""The work of one run (see :func:`agent_app.runs.turn.run_turn`)."""


class RunExecution:
    """The runs this process executes (or has queued), their Stops, leases and the ends storage could not
    take yet: one per storage per process, shared by the run manager and an in-process queue worker."""

    def __init__(
        self, storage: Storage, *, lease_ms: int = LEASE_MS, heartbeat_seconds: float = HEARTBEAT_SECONDS
    ) -> None:
        self.storage = storage
        self.store = storage.run_store()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self.lease_ms = lease_ms
        self._heartbeat_seconds = heartbeat_seconds
        self._stops: dict[str, Cancellation] = {}
        """Runs executing here (or waiting for this process's executor), with their Stop."""
        self._claimed: set[str] = set()
        """Runs of ``_stops`` this process claimed (``running`` as its own): the ones it must hold on to."""
        self._queued: set[str] = set()
        """Runs this process put on a queue: their lease is renewed here until a worker claims them."""
        self._kept: dict[str, list[ChatMessage]] = {}
        """Per conversation, messages a run could not store: written first by its next run's start (an
        answer the model gave is never asked for twice). In memory: a restart loses them, as it loses a run."""
        self._unrecorded: dict[str, tuple[Run, RunEnd]] = {}
        """Runs of this process that ended while storage could not record it: readers here see them as
        ended; the heartbeat keeps their lease and records the end once storage takes it."""
        self._guard = threading.Lock()
        self._heartbeat: threading.Thread | None = None
        self._closed = False

    # --- what this process holds ------------------------------------------------------------------
    def track(self, run_id: str) -> Cancellation:
        """A new run of this process: its Stop, and a lease the heartbeat renews."""
        stop = Cancellation()
        with self._guard:
            self._stops[run_id] = stop
            self._ensure_heartbeat()
        return stop

    def watch_queued(self, run_id: str) -> None:
        """A run this process queued: its lease is renewed here until a worker claims it."""
        with self._guard:
            self._queued.add(run_id)
            self._ensure_heartbeat()

    def forget_queued(self, run_id: str) -> None:
        """A queued run that will not run (its job was cancelled before a worker took it)."""
        with self._guard:
            self._queued.discard(run_id)

    def cancel(self, run_id: str) -> bool:
        """Set the Stop of ``run_id`` if it executes here; whether it does."""
        with self._guard:
            cancellation = self._stops.get(run_id)
        if cancellation is not None:
            cancellation.set()
        return cancellation is not None

    def kept(self, conversation_id: str) -> list[ChatMessage]:
        with self._guard:
            return list(self._kept.get(conversation_id, []))

    def drop_kept(self, conversation_id: str, written: Iterable[str] | None = None) -> None:
        """Forget the kept messages of ``conversation_id`` that were ``written`` (all when ``None``)."""
        with self._guard:
            if written is None:
                self._kept.pop(conversation_id, None)
                return
            done = set(written)
            left = [m for m in self._kept.pop(conversation_id, []) if m.id not in done]
            if left:
                self._kept[conversation_id] = left

    def unrecorded_end(self, run_id: str) -> RunEnd | None:
        with self._guard:
            known = self._unrecorded.get(run_id)
        return None if known is None else known[1]

    def record_unrecorded_ends(self, conversation_id: str) -> None:
        """Record how this process's runs of the conversation ended; a failure propagates (nothing started)."""
        with self._guard:
            pending = [known for known in self._unrecorded.values() if known[0].conversation_id == conversation_id]
        for run, end in pending:
            self._record_end(run, end)
            with self._guard:
                self._unrecorded.pop(run.id, None)

    # --- executing ----------------------------------------------------------------------------
    def execute(self, run: Run, job: RunJob, stop: Cancellation) -> None:
        """Claim ``run`` for this process, do ``job``, record how it ended; ``stop`` is the run's Stop (from
        :meth:`track`)."""
        with self._guard:
            self._queued.discard(run.id)  # claimed here or over: its lease is renewed with this process's runs
        try:
            claimed = not stop.is_set() and self.store.mark_running(
                run.id, owner=self.owner, lease_until=now_ms() + self.lease_ms
            )
            if not claimed:
                self._finish(run, RunEnd("stopped"))
                return
            with self._guard:
                self._claimed.add(run.id)
            control = RunControl(run.model_copy(update={"state": "running", "owner": self.owner}), self, stop)
            try:
                end = job(control.run, control)
            except Exception as exc:  # the run must end in a state, whatever the job did
                logger.exception("Run %s failed", run.id)
                end = RunEnd("error", f"Internal error: {type(exc).__name__}")
            if control.lost:  # another process holds the conversation now: nothing of this run is kept
                return
            if end.unsaved:  # kept before the run reads as over, so a Retry right after finds them
                with self._guard:
                    self._kept.setdefault(run.conversation_id, []).extend(end.unsaved)
            self._finish(run, end)
        finally:
            with self._guard:
                self._stops.pop(run.id, None)
                self._claimed.discard(run.id)
            # A pooled thread holds no database file open between runs (a data folder can then be
            # remounted or removed); the next run on this thread opens its own connection again.
            self.storage.close()

    def end_unexecuted(self, run: Run, end: RunEnd) -> None:
        """Record the end of a queued run of this process that no worker will execute (its job was cancelled,
        or could not be queued)."""
        self.forget_queued(run.id)
        self._finish(run, end)

    def _finish(self, run: Run, end: RunEnd) -> None:
        try:
            self._record_end(run, end)
        except Exception:
            # Readers here see the end at once; the heartbeat keeps the lease and records it once storage
            # takes it (and the conversation's next start records it first).
            logger.warning("Run %s: could not record how it ended (%s)", run.id, end.state, exc_info=True)
            with self._guard:
                self._unrecorded[run.id] = (run, end)
                self._ensure_heartbeat()

    def _record_end(self, run: Run, end: RunEnd) -> None:
        self.store.finish_run(run.id, end.state, end.error, end.error_kind, owner=self.owner)  # with its end event

    def close(self) -> None:
        """Keep no lease alive any more (a process, or a test, done with its runs): the heartbeat ends."""
        with self._guard:
            self._closed = True

    # --- heartbeat ----------------------------------------------------------------------------
    def _ensure_heartbeat(self) -> None:
        """Called with the guard held."""
        if self._heartbeat is None or not self._heartbeat.is_alive():
            self._heartbeat = threading.Thread(target=self._beat, name="agent-run-heartbeat", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        while True:
            with self._guard:
                if self._closed or not (self._stops or self._queued or self._unrecorded):
                    self._heartbeat = None
                    return
            pause = self._heartbeat_seconds
            try:
                renewed = self.store.renew_leases(self.owner, now_ms() + self.lease_ms)
                for run_id in self.store.stop_requested(self.owner):
                    self.cancel(run_id)
                self._not_ours_any_more(renewed)
                self._retry_unrecorded_ends()
            except Exception as exc:  # noqa: BLE001 - a busy database, most often: tried again soon (the lease has room)
                logger.warning("Could not renew the runs' leases: %s", exc)
                pause = self._heartbeat_seconds / 10
            finally:
                self.storage.close()  # one short write per beat: no file held open in between
            time.sleep(pause)

    def _not_ours_any_more(self, renewed: int) -> None:
        """Runs of this process no longer active and its own (deleted with their conversation, marked
        interrupted, claimed by a queue worker): an executing one is stopped, a queued one forgotten. Looked
        up only when fewer leases were renewed than runs are held here (a run not claimed yet is not held: a
        queue worker's run is still its queuer's until this process claims it)."""
        with self._guard:
            held = [*self._claimed, *self._queued, *self._unrecorded]
        if renewed >= len(held):
            return
        for run_id in held:
            run = self.store.get_run(run_id)
            if run is not None and run.active and run.owner == self.owner:
                continue
            self.cancel(run_id)
            with self._guard:
                self._queued.discard(run_id)
                if run is None or not run.active:
                    self._unrecorded.pop(run_id, None)

    def _retry_unrecorded_ends(self) -> None:
        with self._guard:
            pending = list(self._unrecorded.values())
        for run, end in pending:
            self._record_end(run, end)
            with self._guard:
                self._unrecorded.pop(run.id, None)
