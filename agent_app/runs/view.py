"""What a reader makes of a run's events: the live state the page draws while the run goes.

Folded incrementally (``apply`` the events after ``seq``), so a page refreshing every fraction of a
second reads only what is new; the result is plain data that fits in ``st.session_state`` as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from agent_app.runs.events import (
    EndEvent,
    MessageEvent,
    RunEvent,
    StatusEvent,
    TextEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent_app.runs.models import RunState
from agent_app.types import ExecutionState, WireModel


class ToolProgress(WireModel):
    name: str
    fraction: float = 0.0
    message: str = ""


class RunView(WireModel):
    """The live state of one run, as of event ``seq``."""

    run_id: str
    seq: int = 0
    status: ExecutionState = "sending"
    active_tool: str | None = None
    text: str = ""
    """Answer text streamed since the last finished message (that message replaces it)."""
    progress: dict[str, ToolProgress] = Field(default_factory=dict)
    """Progress of the calls still running, by tool call id."""
    input_tokens: int = 0
    output_tokens: int = 0
    ended: RunState | None = None

    def apply(self, events: Iterable[RunEvent]) -> RunView:
        """This view with ``events`` (those after :attr:`seq`, in order) folded in."""
        for event in events:
            if event.seq <= self.seq:
                continue
            self.seq = event.seq
            match event.data:
                case StatusEvent(status=status, active_tool=active_tool):
                    self.status, self.active_tool = status, active_tool
                case TextEvent(delta=delta):
                    self.text += delta
                case MessageEvent(tool_call_id=tool_call_id):
                    self.text = ""
                    self.progress.pop(str(tool_call_id), None)
                case ToolResultEvent(tool_call_id=tool_call_id):
                    self.progress.pop(tool_call_id, None)
                case ToolProgressEvent(tool_call_id=tool_call_id, name=name, fraction=fraction, message=message):
                    self.progress[tool_call_id] = ToolProgress(name=name, fraction=fraction, message=message)
                case UsageEvent(input_tokens=input_tokens, output_tokens=output_tokens):
                    self.input_tokens += input_tokens
                    self.output_tokens += output_tokens
                case EndEvent(state=state):
                    self.ended = state
        return self
