"""The parts of the chat that refresh by themselves: the last answer, drawn live while its run goes, and a
watch for a run another tab or process starts in the open conversation.

Each is a fragment of its own with a timer (:mod:`~agent_app.ui.refresh_timer`), so a refresh redraws that
part alone, never the conversation, the sidebar or the player. A refresh first compares the run's (or the
conversation's) version in :class:`~agent_app.runs.wakeups.RunWakeups` with the one it last drew: equal, it
redraws from what the session keeps and reads nothing from storage; moved, it reads the run and its new events
(and, after a new message, the turn's messages). The one read without news: when the run's lease, as last
read, has run out (its server may be gone; a live server has renewed it, and the next read is a lease later).
A run that starts or ends reruns the page once (the input, the history and the notices change).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import streamlit as st

from agent_app.runs.events import MessageEvent
from agent_app.runs.manager import RunManager
from agent_app.runs.models import Run
from agent_app.runs.view import RunView
from agent_app.session_stores import SessionState
from agent_app.types import ChatMessage, now_ms
from agent_app.ui.chat_history import ANSWER_KEY, LastAnswer, split_at_last_question
from agent_app.ui.history_element import HistoryAction, render_bubbles
from agent_app.ui.live_status import LiveRun, render_live_run
from agent_app.ui.page_parts import redraw_chat
from agent_app.ui.refresh_timer import render_refresh_timer
from agent_app.ui.session_workspace import Workspace

LIVE_REFRESH_SECONDS = 0.2
"""How often the running turn looks for news (text is written a few times a second; the page shows it within
this much more)."""
WATCH_SECONDS = 0.5
"""How often an idle conversation looks for a run started elsewhere."""
TURN_MESSAGES = 200
"""At most this many of the conversation's last messages are read for the running turn."""
_LIVE = "chat.live"
_WATCH = "chat.watch"


def look_before_reading(state: SessionState, runs: RunManager, conversation_id: str) -> None:
    """Note the conversation's version before the page reads whether a run goes, so a run started after that
    read still moves it."""
    state[_WATCH] = (conversation_id, runs.wakeups.conversation_version(conversation_id))


def live_run(state: SessionState, runs: RunManager, run: Run, turn: list[ChatMessage]) -> LiveRun:
    """The session's :class:`LiveRun` of ``run``, brought up to date (a new one for another run)."""
    live = state.get(_LIVE)
    if not isinstance(live, LiveRun) or live.run.id != run.id:
        live = LiveRun(run, RunView(run_id=run.id))
        state[_LIVE] = live
    live.version = runs.wakeups.run_version(run.id)
    live.run = runs.get(run.id) or run  # read after the version: what changed since ``run`` was read shows
    live.view.apply(runs.events(run.id, live.view.seq))
    live.turn = turn
    return live


def started_here(state: SessionState) -> None:
    """This session started a run: once it is over the input gets the focus back, even when the run ended
    before the page drew it live."""
    state.setdefault(_LIVE, "started")


def forget_live(state: SessionState) -> bool:
    """Drop the live run this session drew; whether there was one (the run it showed is over)."""
    return state.pop(_LIVE, None) is not None


def render_answer(workspace: Workspace, runs: RunManager | None, run_id: str | None, stored: LastAnswer) -> None:
    """The answer part, after the history: the ``stored`` bubbles (the last answer and what this tab saw added
    since it opened the conversation, see :func:`~agent_app.ui.chat_history.answer_start`), then, while the run
    ``run_id`` goes, the running turn, refreshing alone every :data:`LIVE_REFRESH_SECONDS`. One part and one
    element for both: once a run is over its stored answer takes the live one's place in that element, and no
    message moves from one element to another (it would show twice, or not at all, for a moment)."""
    st.fragment(_answer_part)(workspace, runs, run_id, stored)


def render_watch(workspace: Workspace, runs: RunManager) -> None:
    """Nothing to see: an idle conversation's watch for a run started elsewhere (then the page reruns)."""
    st.fragment(_watch_part)(workspace, runs)


def _answer_part(workspace: Workspace, runs: RunManager | None, run_id: str | None, stored: LastAnswer) -> None:
    # A click in a tab drawn before the run started (Regenerate on the answer it still shows) reaches this
    # element as the live one: it is handled all the same (and refused, the run going).
    stored = dataclasses.replace(stored, on_action=functools.partial(_act_then_redraw_chat, stored.on_action))
    if runs is None or run_id is None:
        render_bubbles(stored.bubbles, key=ANSWER_KEY, on_action=stored.on_action)
        return
    state = workspace.state
    live = state.get(_LIVE)
    if not isinstance(live, LiveRun) or live.run.id != run_id or not _refresh(workspace, runs, live):
        st.rerun()  # the run is over (or this part is stale): the page draws the answer and the input
    workspace.agent.set_status(live.view.status)
    workspace.agent.set_active_tool(live.view.active_tool)
    render_live_run(runs, live, workspace.agent, stored)
    render_refresh_timer(LIVE_REFRESH_SECONDS, name="chat_live")


def _act_then_redraw_chat(on_action: Callable[[HistoryAction], None], action: HistoryAction) -> None:
    """A click in the stored answer (Regenerate, Edit, more cards) changes the chat, not only this part."""
    on_action(action)
    redraw_chat()


def _refresh(workspace: Workspace, runs: RunManager, live: LiveRun) -> bool:
    """Read what is new, when the run's version moved (or its lease as last read ran out); whether the run
    still goes."""
    version = runs.wakeups.run_version(live.run.id)
    if version == live.version and now_ms() <= live.run.lease_until:
        return live.view.ended is None
    live.version = version
    run = runs.active_run(live.run.conversation_id)  # an expired one is marked interrupted on the way
    if run is None or run.id != live.run.id:
        return False
    live.run = run
    events = runs.events(run.id, live.view.seq)
    live.view.apply(events)
    if any(isinstance(event.data, MessageEvent) for event in events):
        messages = workspace.storage.load_messages(run.conversation_id, limit=TURN_MESSAGES)
        live.turn = split_at_last_question(messages)[1]
    return live.view.ended is None


def _watch_part(workspace: Workspace, runs: RunManager) -> None:
    render_refresh_timer(WATCH_SECONDS, name="chat_watch")
    state = workspace.state
    conversation_id = workspace.conversation_id
    watched = state.get(_WATCH)
    if conversation_id is None or not isinstance(watched, tuple) or watched[0] != conversation_id:
        return
    version = runs.wakeups.conversation_version(conversation_id)
    if version == watched[1]:
        return
    state[_WATCH] = (conversation_id, version)
    if runs.active_run(conversation_id) is not None:
        st.rerun()
