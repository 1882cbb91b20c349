"""The small row under a chat message: Copy on every message; Edit on the last question (changed and sent
again, the old branch of the turn replaced in storage too); Regenerate on the last answer.

The chat decides what a resend or a regeneration starts (``on_resend`` / ``on_regenerate``, called from the
buttons' callbacks, before the next run of the page); this module only draws the row and the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.types import ChatMessage
from agent_app.ui.copy_button import copy_button

_EDITING = "chat.editing_message_id"


def _start_editing(state: SessionState, message: ChatMessage) -> None:
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


def render_actions(state: SessionState, messages: Sequence[ChatMessage], actions: TurnActions | None) -> None:
    """Under a bubble made of ``messages``: Copy (its text), Edit on the last question, Regenerate on the
    last answer."""
    text = "\n\n".join(m.content for m in messages if m.role != "tool" and m.content)
    last = messages[-1]
    editable = actions is not None and last.role == "user" and last.id == actions.last_question_id
    regenerable = actions is not None and any(m.id == actions.answer_start_id for m in messages)
    if not (text or editable or regenerable):
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        if text:
            copy_button(text, key=f"chat_copy_{last.id}")
        if editable and actions is not None:
            st.button(
                "Edit",
                key=f"chat_edit_open_{last.id}",
                icon=":material/edit:",
                type="tertiary",
                on_click=_start_editing,
                args=(state, last),
                disabled=actions.busy,
                help="Change this question and ask again (the answer below is replaced)",
            )
        if regenerable and actions is not None and actions.answer_start_id is not None:
            st.button(
                "Regenerate",
                key=f"chat_regenerate_{last.id}",
                icon=":material/refresh:",
                type="tertiary",
                on_click=actions.on_regenerate,
                args=(actions.answer_start_id,),
                disabled=actions.busy,
                help="Ask for this answer again (this one is replaced)",
            )
