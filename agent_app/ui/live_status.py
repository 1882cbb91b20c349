"""The live part of the chat while a run goes: status, the running tool's progress, the streamed text, Stop;
and, once a run is cut (a provider error mid-stream, a server stopped), the text it had streamed.

Drawn from the session's :class:`~agent_app.session_stores.AgentStore` (status and running tool) and the run's
:class:`~agent_app.runs.view.RunView` (progress, streamed text), both filled from the run's events in storage,
never from the orchestrator itself, so every tab and every reload draws the same run the same way.
"""

from __future__ import annotations

import streamlit as st

from agent_app.runs.manager import RunManager
from agent_app.runs.models import Run
from agent_app.runs.view import RunView
from agent_app.session_stores import AgentStore
from agent_app.types import ExecutionState
from agent_app.ui.chat_history import ASSISTANT_AVATAR
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.markdown_text import chat_markdown

STATUS_LABELS: dict[ExecutionState, str] = {
    "idle": "Done",
    "sending": "Asking the assistant…",
    "processing": "Running tools…",
    "responding": "Writing the answer…",
    "error": "The assistant could not answer",
}
QUEUED_LABEL = "Queued: the assistant starts as soon as it is free…"
STOPPING_LABEL = "Stopping…"
STOP_KEY = "chat_stop"
CUT_TEXT_NOTE = "Cut off before the end: this text is not part of the conversation, and the model does not see it."


def status_label(status: ExecutionState, active_tool: str | None) -> str:
    """``"Running transcribe_video…"`` while a tool runs, else a phrase for the status."""
    if active_tool:
        return f"Running {active_tool}…"
    return STATUS_LABELS[status]


def run_label(run: Run, agent: AgentStore) -> str:
    """What the live box says: stopping, queued, or the agent's status."""
    if run.stop_requested:
        return STOPPING_LABEL
    if run.state == "queued":
        return QUEUED_LABEL
    return status_label(agent.status, agent.active_tool)


def _stop(runs: RunManager, run_id: str) -> None:
    runs.stop(run_id)


def render_live_run(runs: RunManager, run: Run, view: RunView, agent: AgentStore) -> None:
    """One assistant bubble for the run in progress: a status box (the agent store's status) with progress
    bars, the text so far, Stop."""
    with st.chat_message("assistant", avatar=ASSISTANT_AVATAR):
        box = st.status(run_label(run, agent), state="running", expanded=True)  # not ``with``: that completes it
        for progress in view.progress.values():
            text = f"{progress.name}: {progress.message}" if progress.message else progress.name
            box.progress(min(1.0, max(0.0, progress.fraction)), text=escape_markdown(text))
        if view.text:
            st.markdown(chat_markdown(view.text))
        st.button(
            "Stop",
            key=STOP_KEY,
            icon=":material/stop_circle:",
            on_click=_stop,
            args=(runs, run.id),
            disabled=run.stop_requested,
            help="Stop the assistant: the answer so far is kept, a running tool is told to stop.",
        )


def cut_text(runs: RunManager, run: Run) -> str:
    """The answer text ``run`` streamed after its last stored message: what a provider error mid-stream (or a
    server stopped) cut off. Kept only in the run's events, never saved as a message (the model would
    otherwise take a half answer for its own)."""
    return RunView(run_id=run.id).apply(runs.events(run.id)).text


def render_cut_text(text: str) -> None:
    """The text a cut run had streamed, in an assistant bubble that says it is not part of the conversation."""
    with st.chat_message("assistant", avatar=ASSISTANT_AVATAR):
        st.markdown(chat_markdown(text))
        st.caption(CUT_TEXT_NOTE)
