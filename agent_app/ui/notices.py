"""Messages a widget callback leaves for the next draw, shown once next to the control that caused them."""

from __future__ import annotations

import streamlit as st

from agent_app.stores import SessionState
from agent_app.ui.formatting import escape_markdown

_NOTICES = "sidebar.notices"


def _pending(state: SessionState) -> list[tuple[str, str, str]]:
    """``(section, kind, text)`` messages from the last callback, shown once on the next draw."""
    value = state.setdefault(_NOTICES, [])
    if not isinstance(value, list):
        raise TypeError(f"session state {_NOTICES} is not a list")
    return value


def notify(state: SessionState, kind: str, text: str, section: str = "media") -> None:
    _pending(state).append((section, kind, text))


def show_notices(state: SessionState, section: str) -> None:
    """The notices of ``section``, next to the controls that caused them."""
    pending = _pending(state)
    for notice_section, kind, text in pending:
        if notice_section != section:
            continue
        if kind == "error":
            st.error(escape_markdown(text), icon=":material/error:")
        elif kind == "info":
            st.info(escape_markdown(text), icon=":material/info:")
        else:
            st.success(escape_markdown(text), icon=":material/check_circle:")
    state[_NOTICES] = [notice for notice in pending if notice[0] != section]
