"""Starting, stopping and reading runs: the page's only way to make the assistant work.

:class:`RunManager` is the interface. :class:`StoredRunManager` implements it on storage and hands each
accepted run to a dispatcher: :class:`ThreadRunManager` to a bounded executor in this process, and
:class:`~agent_app.runs.queue_manager.QueueRunManager` to a job queue on the shared PostgreSQL database.
Either way the run executes through :class:`~agent_app.runs.execution.RunExecution` (claim, job, end,
unsaved messages, Stop, lease), and nothing that uses the interface assumes the run is in the same
process: a run, its Stop request and its events are all in the
:class:`~agent_app.runs.run_store.RunStore`. In-process extras are only shortcuts: Stop also sets the run's
:class:`~agent_app.cancellation.Cancellation` at once when it executes here (the heartbeat sets it for
Stops other processes wrote to storage, and for runs whose conversation was deleted; the queue's abort
sets the same object in the worker).
"""

from __future__ import annotations

import logging
from typing import Protocol

from agent_app.cancellation import Cancellation
from agent_app.runs.events import RunEvent
from agent_app.runs.execution import (
    HEARTBEAT_SECONDS,
    LEASE_MS,
    RunControl,
    RunEnd,
    RunExecution,
    RunJob,
    lease_ms_for,
)
from agent_app.runs.executor import BoundedExecutor
from agent_app.runs.models import Run
from agent_app.runs.recovery import closing_messages, settled_state
from agent_app.runs.wakeups import RunWakeups
from agent_app.storage.base import Storage
from agent_app.types import AgentContext, ChatMessage, now_ms

__all__ = [
    "DEFAULT_MAX_RUNS",
    "HEARTBEAT_SECONDS",
    "LEASE_MS",
    "RunControl",
    "RunEnd",
    "RunJob",
    "RunManager",
    "StoredRunManager",
    "ThreadRunManager",
    "lease_ms_for",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_RUNS = 4
"""Runs executing at once in one process; more wait ``queued`` (each is mostly waiting on a model or a
transcription, and a transcription uses a core)."""


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

    @property
    def wakeups(self) -> RunWakeups:
        """Versions of runs and conversations that move when something is written (by any process): what a
        watching page compares before it reads anything."""
        ...

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    def active_run(self, conversation_id: str) -> Run | None: ...

    def latest_run(self, conversation_id: str) -> Run | None: ...


class StoredRunManager:
    """The :class:`RunManager` of a storage: runs accepted in storage, dispatched by a subclass
    (:meth:`_dispatch`), read back as this process knows them."""

    def __init__(self, storage: Storage, execution: RunExecution) -> None:
        self.storage = storage
        self.store = storage.run_store()
        self.execution = execution

    @property
    def owner(self) -> str:
        return self.execution.owner

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
        self.execution.record_unrecorded_ends(conversation_id)
        stored = self.storage.load_messages(conversation_id)
        if replace_from is not None:
            stored = stored[: next((i for i, m in enumerate(stored) if m.id == replace_from), len(stored))]
        stored_ids = {m.id for m in stored}
        kept = [] if replace_from is not None else self.execution.kept(conversation_id)
        kept = [m for m in kept if m.id not in stored_ids]
        messages = [*kept, *closing_messages([*stored, *kept])]
        if message is not None:
            messages.append(message)
        run = self.store.create_run(
            conversation_id,
            context,
            messages,
            owner=self.owner,
            lease_until=now_ms() + self.execution.lease_ms,
            replace_from=replace_from,
        )
        self.execution.drop_kept(conversation_id, None if replace_from is not None else [m.id for m in kept])
        self._dispatch(run)
        return run

    def stop(self, run_id: str) -> bool:
        asked = self.store.request_stop(run_id)
        self.execution.cancel(run_id)
        return asked

    def delete_conversation(self, conversation_id: str) -> None:
        active = self.store.active_run(conversation_id)
        if active is not None:
            self.stop(active.id)
        self.storage.delete_conversation(conversation_id)
        self.execution.drop_kept(conversation_id)

    def get(self, run_id: str) -> Run | None:
        return self._as_known(self.store.get_run(run_id))

    @property
    def wakeups(self) -> RunWakeups:
        return self.store.wakeups

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        return self.store.events(run_id, after_seq)

    def active_run(self, conversation_id: str) -> Run | None:
        run = self.store.active_run(conversation_id)
        return None if run is not None and self.execution.unrecorded_end(run.id) is not None else run

    def latest_run(self, conversation_id: str) -> Run | None:
        return self._as_known(self.store.latest_run(conversation_id))

    def close(self) -> None:
        """Start no more runs; this process keeps no lease alive any more."""
        self.execution.close()

    # --- dispatching --------------------------------------------------------------------------
    def _dispatch(self, run: Run) -> None:
        raise NotImplementedError

    # --- reading ------------------------------------------------------------------------------
    def _as_known(self, run: Run | None) -> Run | None:
        """``run`` as this process knows it: interrupted, when its lease ran out; ended, when its end could
        not be recorded yet; answered, when it was interrupted after its answer was stored
        (:func:`~agent_app.runs.recovery.settled_state`)."""
        if run is None:
            return None
        end = self.execution.unrecorded_end(run.id)
        if end is not None:
            return run.model_copy(update={"state": end.state, "error": end.error, "error_kind": end.error_kind})
        if run.active and run.lease_until < now_ms():  # its process is gone: interrupted, as active_run says
            self.store.active_run(run.conversation_id)
            run = self.store.get_run(run.id) or run
        if run.state != "interrupted":
            return run
        last = self.storage.load_messages(run.conversation_id, limit=1)
        state = settled_state(run, last[-1] if last else None)
        return run if state == run.state else run.model_copy(update={"state": state, "error": None})


class ThreadRunManager(StoredRunManager):
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
        super().__init__(storage, RunExecution(storage, lease_ms=lease_ms, heartbeat_seconds=heartbeat_seconds))
        self._job = job
        self._executor = BoundedExecutor(max_workers)

    def _dispatch(self, run: Run) -> None:
        stop: Cancellation = self.execution.track(run.id)
        self._executor.submit(lambda: self.execution.execute(run, self._job, stop))

    def close(self) -> None:
        """Start no more runs: the executor's workers end once the queued runs are done (the heartbeat ends
        with the last run)."""
        self._executor.close()
