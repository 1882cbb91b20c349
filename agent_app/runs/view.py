"""What a reader makes of a run's events: the live state the page draws while the run goes.

Folded incrementally (``apply`` the events after ``seq``), so a page refreshing every fraction of a
second reads only what is new; the result is plain data that fits in ``st.session_state`` as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from agent_app.runs.models import RunEvent, RunState
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
            data = event.data
            if event.kind == "status":
                self.status = data.get("status", self.status)
                self.active_tool = data.get("activeTool")
            elif event.kind == "text":
                self.text += str(data.get("delta", ""))
            elif event.kind == "message":
                self.text = ""
                self.progress.pop(str(data.get("toolCallId")), None)
            elif event.kind == "tool_progress":
                self.progress[str(data.get("toolCallId"))] = ToolProgress(
                    name=str(data.get("name", "")),
                    fraction=float(data.get("fraction", 0.0)),
                    message=str(data.get("message", "")),
                )
            elif event.kind == "usage":
                self.input_tokens += int(data.get("inputTokens") or 0)
                self.output_tokens += int(data.get("outputTokens") or 0)
            elif event.kind == "end":
                self.ended = data.get("state")
        return self
