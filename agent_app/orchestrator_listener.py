"""What a run tells its watcher as it goes: the protocol :class:`~agent_app.orchestrator.Orchestrator` calls.

Why a protocol of its own: the loop must not know who watches it (a server run records events that any
session reads, a test collects them), and the watcher must not import the loop to implement it.
"""

from __future__ import annotations

from typing import Protocol

from agent_app.types import ChatMessage, ExecutionState, ToolCall


class OrchestratorListener(Protocol):
    """What a run records as events (the page draws them live). Every method is called synchronously from
    :meth:`Orchestrator.run`; an exception raised here is logged and otherwise ignored."""

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        """The agent store's status or active tool changed."""
        ...

    def on_message(self, message: ChatMessage) -> None:
        """``message`` was appended to the history and the chat store."""
        ...

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        """The running tool reported progress (``fraction`` clamped to 0..1)."""
        ...

    def on_text(self, delta: str) -> None:
        """A piece of the answer arrived (a streaming client); the finished message follows with ``on_message``."""
        ...
