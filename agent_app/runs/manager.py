"""Starting, stopping and reading runs: the page's only way to make the assistant work.

:class:`RunManager` is the interface; :class:`ThreadRunManager` implements it with a bounded executor
in this process. Nothing that uses the interface assumes the run is in the same process: a run, its
Stop request and its events are all in the :class:`~agent_app.runs.run_store.RunStore`, so a job queue
on a shared database (a PostgreSQL or Redis job library) can take the executor's place without the
page or the orchestrator changing. In-process extras are only shortcuts: Stop also sets the run's
:class:`~agent_app.cancellation.Cancellation` at once (the heartbeat sets it for Stops other processes
wrote to storage, and for runs whose conversation was deleted; a job queue's abort would set the same object).

Liveness is a lease: while a run is queued or running, its process pushes ``lease_until`` forward
every :data:`HEARTBEAT_SECONDS`. A process that stops or is killed stops renewing; once the lease
ends (:data:`LEASE_MS`) every reader treats the run as interrupted, and the page offers Retry.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent_app.cancellation import Cancellation
from agent_app.errors import ErrorKind
from agent_app.runs.events import EndEvent, RunEvent, RunEventData
from agent_app.runs.executor import BoundedExecutor
from agent_app.runs.models import Run, RunState
from agent_app.runs.recovery import closing_messages, settled_state
from agent_app.storage.base import Storage
from agent_app.types import AgentContext, ChatMessage, new_id, now_ms

logger = logging.getLogger(__name__)

LEASE_MS = 10_000
"""How long a run counts as alive without its process renewing it."""
HEARTBEAT_SECONDS = 2.0
"""How often a process renews its runs' leases and looks for Stops written by other processes."""
DEFAULT_MAX_RUNS = 4
"""Runs executing at once in one process; more wait ``queued`` (each is mostly waiting on a model or a
transcription, and a transcription uses a core)."""


@dataclass(frozen=True)
class RunEnd:
    """How a job ended: ``answered``, ``error`` (with a message safe to show, and its kind) or ``stopped``.
    ``unsaved``: messages the job could not store (a busy, full or read-only database), oldest first."""

    state: RunState
    error: str | None = None
    error_kind: ErrorKind | None = None
    unsaved: tuple[ChatMessage, ...] = ()


class RunControl:
    """What a running job may do with its run: record events, and its Stop (``cancellation``)."""

    def __init__(self, run: Run, manager: ThreadRunManager, cancellation: Cancellation) -> None:
        self.run = run
        self.cancellation = cancellation
        self._manager = manager

    def emit(self, event: RunEventData) -> None:
        """Record an event; a failed write (a busy database) is logged and the run goes on."""
        try:
            self._manager.store.append_event(self.run.id, event)
        except Exception:
            logger.warning("Run %s: could not record a %s event", self.run.id, event.kind, exc_info=True)


RunJob = Callable[[Run, RunControl], RunEnd]
"""The work of one run (see :func:`agent_app.runs.turn.run_turn`)."""


class RunManager(Protocol):
    def start(
        self,
        conversation_id: str,
        context: AgentContext | None,
        message: ChatMessage | None = None,
        *,
        replace_from: str | None = None,
    ) -> Run:
        """Queue a run of ``conversation_id`` (after appending ``message``, if any) and return at once.

        ``replace_from``: the message from which the last turn is replaced (the edited question, or the
        start of the answer asked again); it and what follows go in the transaction that accepts the run.
        Raises :class:`~agent_app.runs.models.RunBusyError` while the conversation has a live run,
        :class:`~agent_app.runs.models.TurnChangedError` when ``replace_from`` is no longer in the last turn,
        and :class:`~agent_app.storage.StorageError` when storage cannot take it; nothing is written then.
        """
        ...

    def stop(self, run_id: str) -> bool:
        """Ask the run to stop; ``False`` when it was already over."""
        ...

    def delete_conversation(self, conversation_id: str) -> None:
        """Stop the conversation's live run, then delete the conversation with its messages and runs: a run
        left going would go on asking the model and running tools for a conversation nobody can see."""
        ...

    def get(self, run_id: str) -> Run | None: ...

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    def active_run(self, conversation_id: str) -> Run | None: ...

    def latest_run(self, conversation_id: str) -> Run | None: ...


class ThreadRunManager:
    """Runs jobs on a :class:`BoundedExecutor` of this process, with leases renewed by a heartbeat."""

    def __init__(
        self,
        storage: Storage,
        job: RunJob,
        *,
        max_workers: int = DEFAULT_MAX_RUNS,
        lease_ms: int = LEASE_MS,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.storage = storage
        self.store = storage.run_store()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self._job = job
        self._executor = BoundedExecutor(max_workers)
        self._lease_ms = lease_ms
        self._heartbeat_seconds = heartbeat_seconds
        self._stops: dict[str, Cancellation] = {}
        self._kept: dict[str, list[ChatMessage]] = {}
        self._unrecorded: dict[str, tuple[Run, RunEnd]] = {}
        """Runs of this process that ended while storage could not record it: readers here see them as
        ended, and the conversation's next start records the end before anything else."""
        """Per conversation, messages a run could not store: written first by its next run's start (an
        answer the model gave is never asked for twice). In memory: a restart loses them, as it loses a run."""
        self._guard = threading.Lock()
        self._heartbeat: threading.Thread | None = None

    # --- the interface ------------------------------------------------------------------------
    def start(
        self,
        conversation_id: str,
        context: AgentContext | None,
        message: ChatMessage | None = None,
        *,
        replace_from: str | None = None,
    ) -> Run:
        # Messages the last run could not store come first, then answers to calls an interrupted run left
        # open (results must follow their calls), then the question. Read outside the transaction: a
        # concurrent start loses on the index, and only the start that wrote the kept messages drops them.
        # A replaced turn takes the kept messages with it (they came after everything stored).
        self._record_unrecorded_ends(conversation_id)
        stored = self.storage.load_messages(conversation_id)
        if replace_from is not None:
            stored = stored[: next((i for i, m in enumerate(stored) if m.id == replace_from), len(stored))]
        stored_ids = {m.id for m in stored}
        with self._guard:
            kept = [] if replace_from is not None else self._kept.get(conversation_id, [])
            kept = [m for m in kept if m.id not in stored_ids]
        messages = [*kept, *closing_messages([*stored, *kept])]
        if message is not None:
            messages.append(message)
        run = self.store.create_run(
            conversation_id,
            context,
            messages,
            owner=self.owner,
            lease_until=now_ms() + self._lease_ms,
            replace_from=replace_from,
        )
        stop = Cancellation()
        with self._guard:
            written = {m.id for m in kept}
            left = [m for m in self._kept.pop(conversation_id, []) if m.id not in written]
            if left and replace_from is None:
                self._kept[conversation_id] = left
            self._stops[run.id] = stop
            self._ensure_heartbeat()
        self._executor.submit(lambda: self._execute(run, stop))
        return run

    def stop(self, run_id: str) -> bool:
        asked = self.store.request_stop(run_id)
        with self._guard:
            cancellation = self._stops.get(run_id)
        if cancellation is not None:
            cancellation.set()
        return asked

    def delete_conversation(self, conversation_id: str) -> None:
        active = self.store.active_run(conversation_id)
        if active is not None:
            self.stop(active.id)
        self.storage.delete_conversation(conversation_id)
        with self._guard:
            self._kept.pop(conversation_id, None)

    def get(self, run_id: str) -> Run | None:
        return self._as_known(self.store.get_run(run_id))

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        return self.store.events(run_id, after_seq)

    def active_run(self, conversation_id: str) -> Run | None:
        run = self.store.active_run(conversation_id)
        return None if run is not None and run.id in self._unrecorded else run

    def latest_run(self, conversation_id: str) -> Run | None:
        return self._as_known(self.store.latest_run(conversation_id))

    # --- ends storage could not take ----------------------------------------------------------
    def _as_known(self, run: Run | None) -> Run | None:
        """``run`` as this process knows it: interrupted, when its lease ran out; ended, when its end could
        not be recorded here; answered, when it was interrupted after its answer was stored
        (:func:`~agent_app.runs.recovery.settled_state`)."""
        if run is None:
            return None
        known = self._unrecorded.get(run.id)
        if known is not None:
            end = known[1]
            return run.model_copy(update={"state": end.state, "error": end.error, "error_kind": end.error_kind})
        if run.active and run.lease_until < now_ms():  # its process is gone: interrupted, as active_run says
            self.store.active_run(run.conversation_id)
            run = self.store.get_run(run.id) or run
        if run.state != "interrupted":
            return run
        last = self.storage.load_messages(run.conversation_id, limit=1)
        state = settled_state(run, last[-1] if last else None)
        return run if state == run.state else run.model_copy(update={"state": state, "error": None})

    def _record_unrecorded_ends(self, conversation_id: str) -> None:
        """Record how this process's runs of the conversation ended; a failure propagates (nothing started)."""
        with self._guard:
            pending = [known for known in self._unrecorded.values() if known[0].conversation_id == conversation_id]
        for run, end in pending:
            self._record_end(run, end)
            with self._guard:
                self._unrecorded.pop(run.id, None)

    def close(self) -> None:
        """Start no more runs: the executor's workers end once the queued runs are done (the heartbeat ends
        with the last run)."""
        self._executor.close()

    # --- executing ----------------------------------------------------------------------------
    def _execute(self, run: Run, stop: Cancellation) -> None:
        try:
            if stop.is_set() or not self.store.mark_running(run.id):
                self._finish(run, RunEnd("stopped"))
                return
            control = RunControl(run.model_copy(update={"state": "running"}), self, stop)
            try:
                end = self._job(control.run, control)
            except Exception as exc:  # the run must end in a state, whatever the job did
                logger.exception("Run %s failed", run.id)
                end = RunEnd("error", f"Internal error: {type(exc).__name__}")
            if end.unsaved:  # kept before the run reads as over, so a Retry right after finds them
                with self._guard:
                    self._kept.setdefault(run.conversation_id, []).extend(end.unsaved)
            self._finish(run, end)
        finally:
            with self._guard:
                self._stops.pop(run.id, None)
            # A pooled thread holds no database file open between runs (a data folder can then be
            # remounted or removed); the next run on this thread opens its own connection again.
            self.storage.close()

    def _finish(self, run: Run, end: RunEnd) -> None:
        try:
            self._record_end(run, end)
        except Exception:
            # Readers in this process see the end at once; the next start here records it, and elsewhere
            # the lease runs out and readers see the run as interrupted: nothing waits forever.
            logger.warning("Run %s: could not record how it ended (%s)", run.id, end.state, exc_info=True)
            with self._guard:
                self._unrecorded[run.id] = (run, end)

    def _record_end(self, run: Run, end: RunEnd) -> None:
        if self.store.finish_run(run.id, end.state, end.error, end.error_kind):
            self.store.append_event(run.id, EndEvent(state=end.state, error=end.error, error_kind=end.error_kind))

    # --- heartbeat ----------------------------------------------------------------------------
    def _ensure_heartbeat(self) -> None:
        """Called with the guard held."""
        if self._heartbeat is None or not self._heartbeat.is_alive():
            self._heartbeat = threading.Thread(target=self._beat, name="agent-run-heartbeat", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        while True:
            with self._guard:
                if not self._stops:
                    self._heartbeat = None
                    return
            try:
                renewed = self.store.renew_leases(self.owner, now_ms() + self._lease_ms)
                for run_id in [*self.store.stop_requested(self.owner), *self._vanished(renewed)]:
                    with self._guard:
                        cancellation = self._stops.get(run_id)
                    if cancellation is not None:
                        cancellation.set()
            except Exception:
                logger.warning("Could not renew the runs' leases", exc_info=True)
            finally:
                self.storage.close()  # one short write per beat: no file held open in between
            time.sleep(self._heartbeat_seconds)

    def _vanished(self, renewed: int) -> list[str]:
        """This process's runs no longer stored (their conversation was deleted, here or by another process);
        looked up only when fewer leases were renewed than runs go here."""
        with self._guard:
            live = list(self._stops)
        if renewed >= len(live):
            return []
        return [run_id for run_id in live if self.store.get_run(run_id) is None]
