"""The conversation as chat bubbles, newest at the bottom, only the last page of it drawn.

An assistant turn (its text, the tool calls it made and their results, up to the next user
message) is one bubble with a card per call (a message with many calls draws them a page at a time);
``tool`` messages are not drawn on their own, their results live in the cards. Only the last
:data:`PAGE_SIZE` messages are drawn and "Show older" widens the window, so a rerun costs the same at
10 or 1,000 messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.settings import Prices
from agent_app.types import ChatMessage, ToolResult
from agent_app.ui.context_status import context_summary, latest_context_report, render_cut_marker
from agent_app.ui.markdown_text import chat_markdown, typed_markdown
from agent_app.ui.message_actions import TurnActions, is_editing, render_actions, render_editor
from agent_app.ui.tool_cards import render_tool_cards
from agent_app.usage_cost import total_usage, usage_text

PAGE_SIZE = 40
_WINDOW_KEY = "chat.window"

USER_AVATAR = ":material/person:"
ASSISTANT_AVATAR = ":material/smart_toy:"
SYSTEM_AVATAR = ":material/settings:"


@dataclass
class Turn:
    """Consecutive messages drawn in one bubble."""

    role: str
    messages: list[ChatMessage] = field(default_factory=list)


def visible_slice(messages: Sequence[ChatMessage], window: int) -> tuple[int, list[ChatMessage]]:
    """``(hidden, shown)``: the last ``window`` messages, widened back so no tool result is cut
    off from the assistant message that called it."""
    start = max(0, len(messages) - max(window, 1))
    while start > 0 and messages[start].role == "tool":
        start -= 1
    return start, list(messages[start:])


def group_turns(messages: Sequence[ChatMessage]) -> list[Turn]:
    """User messages stand alone; assistant and tool messages up to the next user message merge."""
    turns: list[Turn] = []
    for message in messages:
        role = "assistant" if message.role == "tool" else message.role
        if role == "assistant" and turns and turns[-1].role == "assistant":
            turns[-1].messages.append(message)
        else:
            turns.append(Turn(role=role, messages=[message]))
    return turns


def _results_by_call(messages: Sequence[ChatMessage]) -> dict[str, ToolResult]:
    return {
        message.tool_result.tool_call_id: message.tool_result
        for message in messages
        if message.role == "tool" and message.tool_result is not None
    }


def render_turn(turn: Turn, prices: Prices | None, state: SessionState, actions: TurnActions | None) -> None:
    """One bubble: markdown text, then a card per tool call, in the order they happened; an answer ends with
    a quiet caption of its tokens (all its model requests), priced when ``prices`` are known; then Copy (and
    Edit or Regenerate, see :mod:`~agent_app.ui.message_actions`)."""
    avatar = {"user": USER_AVATAR, "system": SYSTEM_AVATAR}.get(turn.role, ASSISTANT_AVATAR)
    with st.chat_message(turn.role, avatar=avatar):
        if not render_turn_body(turn.messages, state, actions):
            return
        usage = total_usage(turn.messages) if turn.role == "assistant" else None
        if usage is not None:
            st.caption(usage_text(usage, prices))
        render_actions(state, turn.messages, actions)


def render_turn_body(messages: Sequence[ChatMessage], state: SessionState, actions: TurnActions | None) -> bool:
    """The inside of a bubble: each message's text and its tool cards, in the order they happened (the live
    run draws its turn so far with this, so the running turn looks as it will when done); ``False`` when a
    message's editor took its place."""
    results = _results_by_call(messages)
    called = {call.id for message in messages for call in message.tool_calls or []}
    for message in messages:
        if message.role == "tool":
            result = message.tool_result
            if result is not None and result.tool_call_id not in called:
                st.caption(message.content or f"{result.name} result")
            continue
        if actions is not None and is_editing(state, message):
            render_editor(state, message, actions.on_resend)
            return False
        if message.content:
            # The user's words as typed; the assistant's Markdown rendered (safely, see markdown_text).
            shown = typed_markdown(message.content) if message.role == "user" else chat_markdown(message.content)
            st.markdown(shown)
        render_tool_cards(state, message.id, message.tool_calls or [], results)
    return True


def _show_older(state: SessionState) -> None:
    state[_WINDOW_KEY] = int(state.get(_WINDOW_KEY, PAGE_SIZE)) + PAGE_SIZE


def reset_window(state: SessionState) -> None:
    """Back to the last page (a different conversation was opened)."""
    state[_WINDOW_KEY] = PAGE_SIZE


def render_history(
    state: SessionState,
    messages: Sequence[ChatMessage],
    prices: Prices | None = None,
    actions: TurnActions | None = None,
    *,
    footer: bool = True,
) -> None:
    """Draw the visible part of ``messages``, with a "Show older" button when some are hidden, the marker
    above the oldest message still sent to the model; each answer's tokens, and with ``footer`` one line of
    how full the model's context is and the conversation's total, priced when ``prices`` are known (no
    footer while a run goes: nothing between the question and its live answer)."""
    hidden, shown = visible_slice(messages, int(state.get(_WINDOW_KEY, PAGE_SIZE)))
    if hidden:
        st.button(
            f"Show older messages ({hidden} hidden)",
            key="chat_show_older",
            icon=":material/expand_less:",
            on_click=_show_older,
            args=(state,),
            type="tertiary",
        )
    report = latest_context_report(messages)
    cut = report.first_sent_id if report is not None else None
    for turn in group_turns(shown):
        if cut is not None and turn.messages[0].id == cut:
            render_cut_marker()
        render_turn(turn, prices, state, actions)
    if not footer:
        return
    total = total_usage(messages)
    parts = [] if total is None else [f"This conversation: {usage_text(total, prices)}"]
    if report is not None:
        parts.append(context_summary(report))
    if parts:  # one quiet line under the last answer
        st.caption(" · ".join(parts))
