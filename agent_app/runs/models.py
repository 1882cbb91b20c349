"""The records of a run: one orchestrator turn of a conversation, executed off the page.

A run is a row in storage, not an object in a thread, so any session (another tab, another server
process later) reads it the same way: its state, whether Stop was asked, its lease (a live owner
keeps pushing ``lease_until`` forward; a run whose lease ran out has no owner any more and is
interrupted), and the numbered events its orchestrator wrote as it went (:mod:`agent_app.runs.events`).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from agent_app.errors import ErrorKind
from agent_app.types import AgentContext, WireModel

RunState: TypeAlias = Literal["queued", "running", "answered", "error", "stopped", "interrupted"]
"""``queued`` until a worker takes it, ``running`` while the orchestrator works, then how it ended."""

ACTIVE_STATES: tuple[RunState, ...] = ("queued", "running")
"""States of a run that is not over; storage allows one such run per conversation."""


class Run(WireModel):
    """One run as storage keeps it."""

    id: str
    conversation_id: str
    state: RunState
    context: AgentContext | None = None
    stop_requested: bool = False
    error: str | None = None
    error_kind: ErrorKind | None = None
    owner: str = ""
    lease_until: int = 0
    created_at: int
    finished_at: int | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


class RunBusyError(RuntimeError):
    """A run is already going in the conversation; the message says so in the user's terms."""


BUSY_MESSAGE = (
    "The assistant is still answering in this conversation (perhaps in another tab). "
    "Wait for the answer or press Stop, then send your question again."
)


class LeaseLostError(RuntimeError):
    """A run's write was refused: the run is no longer this owner's (its lease ran out and it was marked
    interrupted, or another process claimed it). A run that lost its lease writes nothing more."""


class TurnChangedError(RuntimeError):
    """The message a tab offered to replace (an edited question, a regenerated answer) is no longer in the
    conversation's last turn: another tab changed it first. Nothing was written."""


TURN_CHANGED_MESSAGE = (
    "This conversation changed in another tab, so nothing was replaced. "
    "Look at its latest messages, then edit or regenerate again."
)
