"""Messages a widget callback leaves for the next draw, shown once next to the control that caused them,
and the Rename field every named record shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.storage import StorageError
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
        elif kind == "warning":
            st.warning(escape_markdown(text), icon=":material/volume_off:")
        else:
            st.success(escape_markdown(text), icon=":material/check_circle:")
    state[_NOTICES] = [notice for notice in pending if notice[0] != section]


def rename_field(
    state: SessionState,
    key: str,
    what: str,
    rename: Callable[[str], object],
    after: Callable[[], None] | None = None,
    **options: Any,
) -> None:
    """A text field (``options`` for ``st.text_input``) and its Rename button, which calls ``rename``, then
    ``after`` once renamed (e.g. to redraw the parts that show the name)."""
    st.text_input(f"Rename this {what} to", key=key, **options)
    st.button(f"Rename {what}", key=f"{key}_button", on_click=rename_from_input, args=(state, key, what, rename, after))


def rename_from_input(
    state: SessionState,
    input_key: str,
    what: str,
    rename: Callable[[str], object],
    after: Callable[[], None] | None = None,
) -> None:
    """A Rename button's callback: ``rename`` to the name typed into ``input_key`` (emptied after); a blank
    name or a storage failure is a notice in the section ``what``."""
    name = str(st.session_state.get(input_key) or "").strip()
    if not name:
        notify(state, "error", f"Type the {what}'s new name first.", what)
        return
    try:
        rename(name)
    except StorageError as exc:
        notify(state, "error", str(exc), what)
        return
    st.session_state[input_key] = ""
    if after is not None:
        after()


def run_confirmed(state: SessionState, confirm_key: str, section: str, action: Callable[[], object]) -> None:
    """The Yes of a "really?" question: the question goes and ``action`` runs; a storage failure is a notice."""
    state[confirm_key] = None
    try:
        action()
    except StorageError as exc:
        notify(state, "error", str(exc), section)


def render_confirmation(  # noqa: PLR0913 - the question, its two buttons and what Yes does
    state: SessionState,
    *,
    confirm_key: str,
    section: str,
    question: str,
    yes_label: str,
    key: str,
    action: Callable[[], object],
) -> None:
    """A "really delete?" question under ``confirm_key``: Yes runs ``action`` (:func:`run_confirmed`), Keep
    takes the question away."""
    st.warning(question, icon=":material/delete:")
    with st.container(horizontal=True, gap="small"):
        st.button(
            yes_label,
            key=f"{key}_yes",
            on_click=run_confirmed,
            args=(state, confirm_key, section, action),
            type="primary",
        )
        st.button("Keep", key=f"{key}_no", on_click=_forget, args=(state, confirm_key))


def _forget(state: SessionState, key: str) -> None:
    state[key] = None
