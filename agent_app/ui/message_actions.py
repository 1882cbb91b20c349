"""The small row under a chat message: Copy on every message; Edit on the last question (changed and sent
again, the old branch of the turn replaced in storage too); Regenerate on the last answer.

The chat decides what a resend or a regeneration starts (``on_resend`` / ``on_regenerate``, called from the
history element's action callback, before the next run of the page); this module only makes the row's HTML
and draws the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.types import ChatMessage
from agent_app.ui.chat_html import attributes

_EDITING = "chat.editing_message_id"


def start_editing(state: SessionState, message: ChatMessage) -> None:
    state[_EDITING] = message.id
    state[f"chat_edit_{message.id}"] = message.content


def _stop_editing(state: SessionState) -> None:
    state[_EDITING] = None


def _send_edit(state: SessionState, message_id: str, on_resend: Callable[[str, str], bool]) -> None:
    """Send the edit; the editor stays open with its text when the resend is refused (a run is going)."""
    text = str(state.get(f"chat_edit_{message_id}") or "").strip()
    if text and on_resend(message_id, text):
        state[_EDITING] = None


def is_editing(state: SessionState, message: ChatMessage) -> bool:
    return state.get(_EDITING) == message.id


def render_editor(state: SessionState, message: ChatMessage, on_resend: Callable[[str, str], bool]) -> None:
    """The last question in a text box, with Send (replaces the turn) and Cancel."""
    st.text_area("Edit your message", key=f"chat_edit_{message.id}", label_visibility="collapsed")
    with st.container(horizontal=True, gap="small"):
        st.button(
            "Send",
            key=f"chat_edit_send_{message.id}",
            icon=":material/send:",
            type="primary",
            on_click=_send_edit,
            args=(state, message.id, on_resend),
        )
        st.button("Cancel", key=f"chat_edit_cancel_{message.id}", on_click=_stop_editing, args=(state,))


@dataclass(frozen=True)
class TurnActions:
    """What the history may offer: the last question (editable), where the last answer starts
    (regenerable) and what a resend or a regeneration starts (``on_resend``: whether it started).
    ``busy``: a run is going."""

    last_question_id: str | None
    answer_start_id: str | None
    on_resend: Callable[[str, str], bool]
    on_regenerate: Callable[[str], None]
    busy: bool = False

    @staticmethod
    def of(messages: Sequence[ChatMessage]) -> tuple[str | None, str | None]:
        """``(last question id, id of the first message after it)`` of ``messages``."""
        index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
        if index is None:
            return None, None
        after = messages[index + 1].id if index + 1 < len(messages) else None
        return messages[index].id, after


def _action_button(kind: str, label: str, target: str, hint: str, *, disabled: bool = False) -> str:
    values = {"data-act": kind, "data-target": target, "title": hint}  # named by its label, the hint a tooltip
    return f"<button {attributes(values)}{' disabled' if disabled else ''}>{label}</button>"


def actions_html(key: str, messages: Sequence[ChatMessage], actions: TurnActions | None) -> str:
    """Under a bubble made of ``messages`` (its element key ``key``): Copy (its text), Edit on the last question,
    Regenerate on the last answer; disabled while a run goes."""
    text = any(m.role != "tool" and m.content for m in messages)
    last = messages[-1]
    editable = actions is not None and last.role == "user" and last.id == actions.last_question_id
    regenerable = actions is not None and any(m.id == actions.answer_start_id for m in messages)
    buttons = [_action_button("copy", "Copy", key, "Copy this message")] if text else []
    if editable and actions is not None:
        hint = "Change this question and ask again (the answer below is replaced)"
        buttons.append(_action_button("edit", "Edit", last.id, hint, disabled=actions.busy))
    if regenerable and actions is not None and actions.answer_start_id is not None:
        hint = "Ask for this answer again (this one is replaced)"
        buttons.append(_action_button("regenerate", "Regenerate", actions.answer_start_id, hint, disabled=actions.busy))
    return f'<div class="actions">{"".join(buttons)}</div>' if buttons else ""
