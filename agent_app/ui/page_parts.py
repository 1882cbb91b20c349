"""The parts of the page that redraw alone (Streamlit fragments, by key): switching, renaming or deleting a
conversation redraws the chat and the conversation list, not the sidebar, the player or the transcript; a
search of the conversations redraws their list."""

from __future__ import annotations

import streamlit as st

CHAT_PART = "chat_part"
CONVERSATIONS_PART = "conversations_part"


def redraw_chat() -> None:
    """From a widget callback: after it, only the chat and the conversation list are drawn again.
    Ends the callback (Streamlit's keyed rerun raises), so it comes last."""
    st.rerun([CHAT_PART, CONVERSATIONS_PART])


def redraw_conversations() -> None:
    """From a widget callback: after it, only the conversation list is drawn again (ends the callback)."""
    st.rerun(CONVERSATIONS_PART)
