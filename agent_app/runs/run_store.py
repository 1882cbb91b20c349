"""Where runs and their events are kept: the interface the run manager and the page depend on.

"One run per conversation at a time" is the store's job, not a lock's: :meth:`RunStore.create_run`
fails with :class:`~agent_app.runs.models.RunBusyError` while another active run of the conversation
holds a live lease (SQLite and PostgreSQL both enforce it with a unique partial index), so it holds
across sessions and across server processes sharing one database. Replacing the last turn is part of
that same transaction, so nothing is deleted while a run is live, whatever a tab last drew.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from agent_app.errors import ErrorKind
from agent_app.runs.events import RunEvent, RunEventData
from agent_app.runs.models import LeaseLostError, Run, RunState
from agent_app.runs.wakeups import RunWakeups
from agent_app.types import AgentContext, ChatMessage

__all__ = ["LeaseLostError", "RunStore"]


class RunStore(Protocol):
    @property
    def wakeups(self) -> RunWakeups:
        """This process's wake-ups for the runs of this store: every write below announces itself there, and
        other processes' writes arrive there too, so a watcher compares versions instead of querying."""
        ...

    def create_run(  # noqa: PLR0913 - the run and the turn it replaces are one transaction, so one call
        self,
        conversation_id: str,
        context: AgentContext | None,
        messages: Sequence[ChatMessage],
        *,
        owner: str,
        lease_until: int,
        replace_from: str | None = None,
    ) -> Run:
        """A new ``queued`` run, and ``messages`` appended to the conversation, in one transaction.

        An active run whose lease has run out is marked ``interrupted`` first; a live one makes this
        raise :class:`RunBusyError` with nothing written. With ``replace_from`` (an edited question, a
        regenerated answer) that message and every one after it are deleted in the same transaction,
        after the run is accepted, and a title made from a replaced question gives way to the new one;
        when that message is gone or no longer in the last turn (a user message follows it) this raises
        :class:`TurnChangedError` with nothing written. (PostgreSQL: the same statements in one
        transaction, the unique partial index refusing the run before any delete.)
        """
        ...

    def get_run(self, run_id: str) -> Run | None: ...

    def active_run(self, conversation_id: str) -> Run | None:
        """The conversation's run that is not over (an expired one is marked interrupted on the way)."""
        ...

    def latest_run(self, conversation_id: str) -> Run | None: ...

    def mark_running(self, run_id: str, *, owner: str | None = None, lease_until: int | None = None) -> bool:
        """``queued`` → ``running``; ``False`` when the run is no longer queued (stopped, interrupted) or its
        lease ran out. With ``owner`` the run becomes that owner's (a queue worker claiming it), its lease
        pushed to ``lease_until``."""
        ...

    def append_event(self, run_id: str, event: RunEventData, *, owner: str | None = None) -> int:
        """Record an event; its sequence number. With ``owner`` (a run's own writes) the event is written
        only while the run is active, ``owner``'s, and its lease live; else :class:`LeaseLostError`."""
        ...

    def append_run_message(self, run_id: str, owner: str, conversation_id: str, message: ChatMessage) -> None:
        """Append ``message`` as :meth:`Storage.append_message` does, fenced like :meth:`append_event`."""
        ...

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    def request_stop(self, run_id: str) -> bool:
        """Ask an active run to stop; ``False`` when it is already over."""
        ...

    def stop_requested(self, owner: str) -> list[str]:
        """Active runs of ``owner`` someone asked to stop (possibly from another process)."""
        ...

    def finish_run(
        self,
        run_id: str,
        state: RunState,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
        *,
        owner: str | None = None,
    ) -> bool:
        """End an active run, its :class:`~agent_app.runs.events.EndEvent` appended in the same write (a reader
        never sees the run ended without it); ``False`` (and no change) when it had already ended, or, with
        ``owner``, when it is no longer ``owner``'s with a live lease (a run that lost its lease records no end)."""
        ...

    def renew_leases(self, owner: str, lease_until: int) -> int:
        """Push the lease of every active run of ``owner`` whose lease is still live to ``lease_until``; how
        many. A lease that ran out is not renewed: readers may already have marked that run interrupted."""
        ...
