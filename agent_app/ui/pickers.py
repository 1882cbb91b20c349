"""A selectbox or radio over record ids that shows their names, with the workspace as the truth.

The widget's value is set from the workspace before each draw (a choice made elsewhere, a reload,
another project, must show), and a user's pick is handed to ``on_pick`` in the widget callback.

The browser sends a selectbox's or radio's choice back as its *label*, and Streamlit maps a label to
the last option showing it; two records with the same name (the same clip uploaded twice, two
projects called "Test") would pick the wrong one. Labels are therefore made unique first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import streamlit as st


def _picked(key: str, on_pick: Callable[[str | None], None]) -> None:
    value = st.session_state.get(key)
    on_pick(value if isinstance(value, str) else None)


def unique_labels(names: Mapping[str, str]) -> dict[str, str]:
    """id -> label, with `` (2)``, `` (3)``… after a name already used by an earlier record."""
    labels: dict[str, str] = {}
    used: set[str] = set()
    for record_id, name in names.items():
        label, count = name, 1
        while label in used:
            count += 1
            label = f"{name} ({count})"
        used.add(label)
        labels[record_id] = label
    return labels


class Choices(NamedTuple):
    """The records to pick from (id -> name) and the id picked now."""

    names: Mapping[str, str]
    current: str


def pick_by_id(
    widget: Callable[..., Any],
    label: str,
    choices: Choices,
    *,
    key: str,
    on_pick: Callable[[str | None], None],
    **options: Any,
) -> None:
    """Draw ``widget`` (``st.selectbox``/``st.radio``) over ``choices`` showing the current one."""
    labels = unique_labels(choices.names)
    st.session_state[key] = choices.current
    widget(
        label,
        options=list(labels),
        format_func=lambda record_id: labels.get(record_id, record_id),
        key=key,
        on_change=_picked,
        args=(key, on_pick),
        **options,
    )
