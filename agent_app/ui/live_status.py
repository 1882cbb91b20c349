"""The live view of a run in progress: an ``st.status`` that follows the agent store.

The orchestrator calls this listener synchronously from the script thread, so each update is an
ordinary Streamlit call that reaches the browser immediately, while the run is still going.
Each drawing call goes through a :class:`~agent_app.ui.rerun_guard.RerunDeferral`, so a click
during the run is applied after it instead of cutting it short.
"""

from __future__ import annotations

from typing import Any

from agent_app.types import ChatMessage, ExecutionState, ToolCall
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.markdown_text import chat_markdown
from agent_app.ui.rerun_guard import RerunDeferral

STATUS_LABELS: dict[ExecutionState, str] = {
    "idle": "Done",
    "sending": "Asking the assistant…",
    "processing": "Running tools…",
    "responding": "Writing the answer…",
    "error": "The assistant could not answer",
}


def status_label(status: ExecutionState, active_tool: str | None) -> str:
    """``"Running transcribe_video…"`` while a tool runs, else a phrase for the status."""
    if active_tool:
        return f"Running {active_tool}…"
    return STATUS_LABELS[status]


class LiveStatus:
    """An :class:`~agent_app.orchestrator.OrchestratorListener` drawing into an ``st.status`` box.

    ``box`` is the object ``st.status(...)`` returned (typed loosely: Streamlit's status container
    is a ``DeltaGenerator`` with an ``update`` method). Every drawing call goes through
    ``deferral`` so a click during the run never cuts it short.
    """

    def __init__(self, box: Any | None, deferral: RerunDeferral | None = None) -> None:
        self._box = box
        self._bars: dict[str, Any] = {}
        self._deferral = deferral if deferral is not None else RerunDeferral()

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        if self._box is None:  # the box could not be drawn (see RerunDeferral): the run goes on unseen
            return
        state = "error" if status == "error" else ("complete" if status == "idle" else "running")
        with self._deferral.hold():
            # ``expanded`` every time: an update without it folds the box in the browser.
            self._box.update(label=status_label(status, active_tool), state=state, expanded=state == "running")

    def on_message(self, message: ChatMessage) -> None:
        if self._box is None:
            return
        with self._deferral.hold():
            if message.role == "assistant" and message.tool_calls:
                if message.content:
                    self._box.markdown(chat_markdown(message.content))
                for call in message.tool_calls:
                    self._box.markdown(f":material/build: Calling **{escape_markdown(call.name)}**")
            elif message.role == "tool" and message.tool_result is not None:
                result = message.tool_result
                icon = ":material/error:" if result.error is not None else ":material/check_circle:"
                self._box.markdown(f"{icon} {escape_markdown(message.content)}")
                bar = self._bars.pop(result.tool_call_id, None)
                if bar is not None:
                    bar.empty()

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        if self._box is None:
            return
        text = f"{call.name}: {message}" if message else call.name
        with self._deferral.hold():
            bar = self._bars.get(call.id)
            if bar is None:
                self._bars[call.id] = self._box.progress(fraction, text=text)
            else:
                bar.progress(fraction, text=text)
