"""The live part of the chat while a run goes: status, the running tool's progress, the streamed text, Stop;
and, once a run is cut (a provider error mid-stream, a server stopped), the text it had streamed.

Drawn from the session's :class:`~agent_app.session_stores.AgentStore` (status and running tool) and the run's
:class:`~agent_app.runs.view.RunView` (progress, streamed text), both filled from the run's events in storage,
never from the orchestrator itself, so every tab and every reload draws the same run the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from agent_app.runs.manager import RunManager
from agent_app.runs.models import Run
from agent_app.runs.view import RunView
from agent_app.session_stores import AgentStore
from agent_app.types import ChatMessage, ExecutionState
from agent_app.ui.chat_history import ANSWER_KEY, LastAnswer, body_html, bubble_html
from agent_app.ui.chat_html import answer_html, text_html
from agent_app.ui.history_element import Bubble, render_bubbles

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
_CUT_STATES = ("error", "interrupted")
"""A run that ended so may have streamed text it did not store (:func:`cut_text`)."""
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


@dataclass
class LiveRun:
    """What a tab shows of the run in progress, kept in its session between refreshes: the run as last read,
    the view of its events, the version of its wake-ups that view is up to date with, the turn's messages so
    far, and the streamed text's HTML (made again only when the text grew)."""

    run: Run
    view: RunView
    version: int = -1
    turn: list[ChatMessage] = field(default_factory=list)
    html_of: str = ""
    html: str = ""

    def text_html(self) -> str:
        if self.html_of != self.view.text:
            self.html_of, self.html = self.view.text, answer_html(self.view.text)
        return self.html


LIVE_BUBBLE_PREFIX = "live-"
"""The live answer's bubble key starts so (then the run's id)."""


def live_bubble(live: LiveRun, agent: AgentStore) -> Bubble:
    """The running turn drawn as the answer will look when done: a status line (the agent store's status)
    with progress bars, the turn's messages so far with their tool cards, the text streaming now."""
    run, view = live.run, live.view
    parts = [f'<div class="status" role="status">{text_html(run_label(run, agent))}</div>']
    for progress in view.progress.values():
        text = f"{progress.name}: {progress.message}" if progress.message else progress.name
        fraction = min(1.0, max(0.0, progress.fraction))
        parts.append(
            f'<div class="progress">{text_html(text)}<progress max="1" value="{fraction:.3f}"></progress></div>'
        )
    parts.append(body_html(live.turn, st.session_state))
    if view.text:
        parts.append(f'<div class="text">{live.text_html()}</div>')
    return Bubble(key=f"{LIVE_BUBBLE_PREFIX}{run.id}", html=bubble_html("assistant", "".join(parts)))


def render_live_run(runs: RunManager, live: LiveRun, agent: AgentStore, stored: LastAnswer) -> None:
    """The answer part's ``stored`` bubbles, then one assistant bubble for the run in progress (see
    :func:`live_bubble`), then Stop. Drawn as the element the stored answer is drawn as
    (:data:`~agent_app.ui.chat_history.ANSWER_KEY`): once the run is over its answer replaces the live bubble
    there. A click in a bubble this element showed before (a tab not redrawn since the run started still shows
    it) is handled as ``stored`` says."""
    render_bubbles([*stored.bubbles, live_bubble(live, agent)], key=ANSWER_KEY, on_action=stored.on_action)
    st.button(
        "Stop",
        key=STOP_KEY,
        icon=":material/stop_circle:",
        on_click=_stop,
        args=(runs, live.run.id),
        disabled=live.run.stop_requested,
        help="Stop the assistant: the answer so far is kept, a running tool is told to stop.",
    )


def cut_text(runs: RunManager, run: Run) -> str:
    """The answer text ``run`` streamed after its last stored message: what a provider error mid-stream (or a
    server stopped) cut off. Kept only in the run's events, never saved as a message (the model would
    otherwise take a half answer for its own)."""
    return RunView(run_id=run.id).apply(runs.events(run.id)).text


def cut_text_bubbles(runs: RunManager, run: Run | None) -> list[Bubble]:
    """The text the ended ``run`` had streamed when it was cut (an error, an interruption), in an assistant bubble
    that says it is not part of the conversation: drawn where the live answer was, after what of it was stored."""
    text = cut_text(runs, run) if run is not None and run.state in _CUT_STATES else ""
    if not text:
        return []
    inside = f'<div class="text">{answer_html(text)}</div><div class="quiet">{text_html(CUT_TEXT_NOTE)}</div>'
    return [Bubble(key="cut", html=bubble_html("assistant", inside))]
