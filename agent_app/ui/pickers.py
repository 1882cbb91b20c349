"""A selectbox or radio over record ids that shows their names, with the workspace as the truth.

The widget's value is set from the workspace before each draw (a choice made elsewhere, a reload,
another project, must show), and a user's pick is handed to ``on_pick`` in the widget callback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st


def _picked(key: str, on_pick: Callable[[str | None], None]) -> None:
    value = st.session_state.get(key)
    on_pick(value if isinstance(value, str) else None)


def pick_by_id(
    widget: Callable[..., Any],
    label: str,
    names: Mapping[str, str],
    current: str,
    *,
    key: str,
    on_pick: Callable[[str | None], None],
    **options: Any,
) -> None:
    """Draw ``widget`` (``st.selectbox``/``st.radio``) over ``names`` (id -> name) showing ``current``."""
    st.session_state[key] = current
    widget(
        label,
        options=list(names),
        format_func=lambda record_id: names.get(record_id, record_id),
        key=key,
        on_change=_picked,
        args=(key, on_pick),
        **options,
    )
