"""The conversation as chat bubbles, newest at the bottom, only the last page of it drawn.

Drawn as one element (:mod:`~agent_app.ui.history_element`), its HTML made here. An assistant turn (its
text, the tool calls it made and their results, up to the next user message) is one bubble with a card per
call (a message with many calls draws them a page at a time);
``tool`` messages are not drawn on their own, their results live in the cards. Only the last
:data:`PAGE_SIZE` messages are drawn and "Show older" widens the window, so a rerun costs the same at
10 or 1,000 messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.settings import Prices
from agent_app.types import ChatMessage, ContextReport, ToolResult
from agent_app.ui.chat_html import answer_html, text_html, typed_html
from agent_app.ui.context_status import context_summary, cut_marker_html, latest_context_report
from agent_app.ui.history_element import Bubble, HistoryAction, render_bubbles
from agent_app.ui.message_actions import TurnActions, actions_html, is_editing, render_editor, start_editing
from agent_app.ui.tool_cards import show_more_cards, tool_cards_html
from agent_app.usage_cost import total_usage, usage_text

PAGE_SIZE = 40
_WINDOW_KEY = "chat.window"
_ANSWER_AFTER = "chat.answer_after"
HISTORY_KEY = "chat_history_bubbles"
HISTORY_AFTER_EDIT_KEY = "chat_history_after_edit"
ANSWER_KEY = "chat_answer_bubbles"
"""The element of the last answer, stored or live (one element, see :func:`render_history`)."""


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


def body_html(messages: Sequence[ChatMessage], state: SessionState) -> str:
    """The inside of a bubble: each message's text and its tool cards, in the order they happened (the live run
    draws its turn so far with this, so the running turn looks as it will when done)."""
    results = _results_by_call(messages)
    called = {call.id for message in messages for call in message.tool_calls or []}
    parts: list[str] = []
    for message in messages:
        if message.role == "tool":
            result = message.tool_result
            if result is not None and result.tool_call_id not in called:
                parts.append(f'<div class="quiet">{text_html(message.content or f"{result.name} result")}</div>')
            continue
        if message.content:
            # The user's words as typed; the assistant's Markdown rendered (safely, see chat_html).
            text = typed_html(message.content) if message.role == "user" else answer_html(message.content)
            parts.append(f'<div class="text">{text}</div>')
        parts.append(tool_cards_html(state, message.id, message.tool_calls or [], results))
    return "".join(parts)


def bubble_html(role: str, inside: str) -> str:
    """A bubble of ``role`` around ``inside`` (its avatar drawn by the element's style)."""
    role = role if role in ("user", "assistant", "system") else "assistant"
    avatar = '<div class="avatar"></div>'
    opening = f'<div class="bubble {role}" data-role="{role}" data-testid="chatBubble">'
    return f'{opening}{avatar}<div class="body">{inside}</div></div>'


def copy_text(messages: Sequence[ChatMessage]) -> str:
    """What Copy puts on the clipboard: the messages' text as written."""
    return "\n\n".join(m.content for m in messages if m.role != "tool" and m.content)


def turn_bubble(turn: Turn, prices: Prices | None, state: SessionState, actions: TurnActions | None) -> Bubble:
    """One bubble: text, then a card per tool call, in the order they happened; an answer ends with a quiet line
    of its tokens (all its model requests), priced when ``prices`` are known; then Copy (and Edit or Regenerate,
    see :mod:`~agent_app.ui.message_actions`)."""
    inside = body_html(turn.messages, state)
    usage = total_usage(turn.messages) if turn.role == "assistant" else None
    if usage is not None:
        inside += f'<div class="quiet">{text_html(usage_text(usage, prices))}</div>'
    key = turn.messages[0].id
    inside += actions_html(key, turn.messages, actions)
    return Bubble(key=key, html=bubble_html(turn.role, inside), copy_text=copy_text(turn.messages))


def _show_older(state: SessionState) -> None:
    state[_WINDOW_KEY] = int(state.get(_WINDOW_KEY, PAGE_SIZE)) + PAGE_SIZE


def reset_window(state: SessionState) -> None:
    """Back to the last page (a different conversation was opened)."""
    state[_WINDOW_KEY] = PAGE_SIZE


def _on_action(
    state: SessionState, shown: Sequence[ChatMessage], actions: TurnActions | None
) -> Callable[[HistoryAction], None]:
    """What a click in the history does; a target this draw does not show (a forged trigger) does nothing.
    Regenerate takes any answer shown, not only the one this draw offers: a tab drawn before a run started
    or a turn was added still offers the old one, and storage, which refuses a start while a run goes or
    once the turn changed, says why."""

    def handle(action: HistoryAction) -> None:
        index = next((i for i, m in enumerate(shown) if m.id == action.target), None)
        if index is None:
            return
        target = shown[index]
        if action.kind == "more_cards":
            show_more_cards(state, target.id)
        elif actions is not None and action.kind == "edit" and target.id == actions.last_question_id:
            start_editing(state, target)  # the tab's own editor: only on the question a resend can replace
        elif actions is not None and action.kind == "regenerate" and index > 0 and shown[index - 1].role == "user":
            actions.on_regenerate(target.id)  # an answer's first message

    return handle


def history_bubbles(
    state: SessionState,
    shown: Sequence[ChatMessage],
    report_cut: str | None,
    prices: Prices | None,
    actions: TurnActions | None,
) -> list[Bubble]:
    """The bubbles of ``shown``, the marker above the oldest message still sent to the model (``report_cut``)."""
    bubbles: list[Bubble] = []
    for turn in group_turns(shown):
        if report_cut is not None and turn.messages[0].id == report_cut:
            bubbles.append(Bubble(key=f"cut-{report_cut}", html=cut_marker_html()))
        bubbles.append(turn_bubble(turn, prices, state, actions))
    return bubbles


def split_at_last_question(messages: Sequence[ChatMessage]) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """``(head, answer)``: the messages up to the last question, and the answer's messages after it."""
    last_question = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return list(messages[: last_question + 1]), list(messages[last_question + 1 :])


def answer_start(state: SessionState, conversation_id: str | None, messages: Sequence[ChatMessage]) -> int:
    """Where the answer part begins in ``messages``: after the last question as this tab opened the conversation,
    and there for as long as it stays open, so what is added meanwhile (the next questions, their answers, live
    then stored) is drawn in the answer part, and no message moves from one element to the other as a run starts
    or ends (it would show twice, or not at all, for a moment). After the last question again when the
    conversation is opened anew, an edit starts in the answer part, or the question it follows is gone (its turn
    replaced)."""
    kept = state.get(_ANSWER_AFTER)
    if isinstance(kept, tuple) and kept[0] == conversation_id:
        after = kept[1]
        start = 0 if after is None else next((i + 1 for i, m in enumerate(messages) if m.id == after), None)
        if start is not None and not any(is_editing(state, m) for m in messages[start:]):
            return start
    head = split_at_last_question(messages)[0]
    state[_ANSWER_AFTER] = (conversation_id, head[-1].id if head else None)
    return len(head)


@dataclass(frozen=True)
class LastAnswer:
    """The answer part's stored messages as bubbles (the last answer, and what this tab saw added since, see
    :func:`answer_start`), with what a click in them does and the latest context report the history read (for
    the footer line, :func:`footer_bubbles`): drawn by the answer part (:mod:`~agent_app.ui.live_turn`), followed
    by the live answer while a run goes."""

    bubbles: list[Bubble]
    on_action: Callable[[HistoryAction], None]
    context: ContextReport | None = None

    def followed_by(self, bubbles: Sequence[Bubble]) -> LastAnswer:
        """The same answer, with ``bubbles`` drawn after it."""
        return replace(self, bubbles=[*self.bubbles, *bubbles])


def render_history(
    state: SessionState,
    messages: Sequence[ChatMessage],
    answer_from: int,
    prices: Prices | None = None,
    actions: TurnActions | None = None,
) -> LastAnswer:
    """Draw the visible part of ``messages`` before ``answer_from`` (see :func:`answer_start`), with a "Show
    older" button when some are hidden, the marker above the oldest message still sent to the model, and each
    answer's tokens; a question being edited is drawn as its editor, between the bubbles before it and after it.
    The rest is returned, not drawn: the answer part draws it, in the element that also draws the live answer,
    so a stored answer replaces the live one in place when its run ends."""
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
    on_action = _on_action(state, shown, actions)
    split = max(0, answer_from - hidden)
    head, answer = shown[:split], shown[split:]
    editing = next((i for i, m in enumerate(head) if actions is not None and is_editing(state, m)), None)
    if editing is not None and actions is not None:
        before, edited, rest = head[:editing], head[editing], head[editing + 1 :]
        render_bubbles(
            history_bubbles(state, before, _cut(report), prices, actions), key=HISTORY_KEY, on_action=on_action
        )
        render_editor(state, edited, actions.on_resend)
        head = rest
        key = HISTORY_AFTER_EDIT_KEY
    else:
        key = HISTORY_KEY
    render_bubbles(history_bubbles(state, head, _cut(report), prices, actions), key=key, on_action=on_action)
    return LastAnswer(history_bubbles(state, answer, _cut(report), prices, actions), on_action, report)


def footer_bubbles(
    messages: Sequence[ChatMessage], report: ContextReport | None, prices: Prices | None
) -> list[Bubble]:
    """One quiet line under the last answer, when there is something to say: the conversation's tokens (priced
    when ``prices`` are known) and how full the model's context is (``report``, the latest of ``messages``)."""
    total = total_usage(messages)
    parts = [] if total is None else [f"This conversation: {usage_text(total, prices)}"]
    if report is not None:
        parts.append(context_summary(report))
    return [Bubble(key="footer", html=f'<div class="quiet">{text_html(" · ".join(parts))}</div>')] if parts else []


def _cut(report: ContextReport | None) -> str | None:
    return report.first_sent_id if report is not None else None
