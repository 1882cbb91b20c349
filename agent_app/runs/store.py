"""Where runs and their events are kept: the interface the run manager and the page depend on.

"One run per conversation at a time" is the store's job, not a lock's: :meth:`RunStore.create_run`
fails with :class:`~agent_app.runs.models.RunBusyError` while another active run of the conversation
holds a live lease (SQLite and PostgreSQL both enforce it with a unique partial index), so it holds
across sessions and across server processes sharing one database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agent_app.errors import ErrorKind
from agent_app.runs.models import EventKind, Run, RunEvent, RunState
from agent_app.types import AgentContext, ChatMessage


class RunStore(Protocol):
    def create_run(
        self,
        conversation_id: str,
        context: AgentContext | None,
        messages: Sequence[ChatMessage],
        *,
        owner: str,
        lease_until: int,
    ) -> Run:
        """A new ``queued`` run, and ``messages`` appended to the conversation, in one transaction.

        An active run whose lease has run out is marked ``interrupted`` first; a live one makes this
        raise :class:`RunBusyError` with nothing written.
        """
        ...

    def get_run(self, run_id: str) -> Run | None: ...

    def active_run(self, conversation_id: str) -> Run | None:
        """The conversation's run that is not over (an expired one is marked interrupted on the way)."""
        ...

    def latest_run(self, conversation_id: str) -> Run | None: ...

    def mark_running(self, run_id: str) -> bool:
        """``queued`` → ``running``; ``False`` when the run is no longer queued (stopped, interrupted)."""
        ...

    def append_event(self, run_id: str, kind: EventKind, data: dict[str, Any]) -> int:
        """Record an event; its sequence number."""
        ...

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    def request_stop(self, run_id: str) -> bool:
        """Ask an active run to stop; ``False`` when it is already over."""
        ...

    def stop_requested(self, owner: str) -> list[str]:
        """Active runs of ``owner`` someone asked to stop (possibly from another process)."""
        ...

    def finish_run(
        self, run_id: str, state: RunState, error: str | None = None, error_kind: ErrorKind | None = None
    ) -> bool:
        """End an active run; ``False`` (and no change) when it had already ended."""
        ...

    def renew_leases(self, owner: str, lease_until: int) -> int:
        """Push the lease of every active run of ``owner`` to ``lease_until``; how many."""
        ...
