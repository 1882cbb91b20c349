"""One tool call as a compact card: name, arguments, result or error, how long it took.

Cards of finished calls are collapsed expanders, so a turn with several calls stays one screen;
a card of a call that never got a result (the run was interrupted) says so instead of pretending.
A model message with many calls (a broken or hostile model can ask for a thousand) draws its first
:data:`CARDS_SHOWN` cards and a "Show more" button that draws the next :data:`CARDS_PAGE`, so opening
such a conversation costs what a short one does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from agent_app.clock import elapsed_text
from agent_app.invisible_chars import escape_invisible
from agent_app.orchestrator_options import MAX_CALLS_PER_ROUND
from agent_app.session_stores import SessionState
from agent_app.types import ToolCall, ToolResult
from agent_app.ui.formatting import count_of, escape_markdown

MAX_RESULT_DISPLAY_CHARS = 20_000
"""Beyond this a result is shown as truncated text: a long transcript must not freeze the browser."""
CARDS_SHOWN = MAX_CALLS_PER_ROUND
"""Cards drawn at first for one model message: as many as the calls that can run in one turn."""
CARDS_PAGE = 50
"""Cards each "Show more" adds."""
_SHOWN_KEY = "chat.cards_shown."


def card_label(call: ToolCall, result: ToolResult | None) -> str:
    """The one-line summary shown on the collapsed card; the model's tool name shown literally, its controls and
    direction marks as ``\\uXXXX`` (a U+202E would flip the rest of the label, an ESC or NUL is not text)."""
    if result is None:
        state = "no result"
    elif result.error is not None:
        state = "failed"
    else:
        state = "done"
    elapsed = elapsed_text(result.duration_ms) if result is not None and result.duration_ms is not None else ""
    parts = [f"**{escape_markdown(escape_invisible(call.name))}**", state]
    if elapsed:
        parts.append(elapsed)
    return " · ".join(parts)


def card_icon(result: ToolResult | None) -> str:
    if result is None:
        return ":material/hourglass_empty:"
    return ":material/error:" if result.error is not None else ":material/check_circle:"


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _value_text(value: Any, depth: int = 0) -> str:  # noqa: PLR0911 - one plain return per kind of value
    """A value as a person reads it: text as itself, a number or a yes/no plainly, a list of such joined by
    commas, a record as ``name value · name value``, a list of records one per line; deeper as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ", ".join(_value_text(item) for item in value) or "none"
    if isinstance(value, dict) and depth < 2:
        return " · ".join(f"{name} {_value_text(item, depth + 1)}" for name, item in value.items()) or "none"
    if isinstance(value, list) and depth < 1:  # a list of records (segments, matches): one line each
        return "\n".join(_value_text(item, depth + 1) for item in value) or "none"
    return _json_text(value)


def readable_fields(value: Any) -> str:
    """Arguments or a result as Markdown lines ``**name** value``, every name and value shown literally, the
    whole cut at :data:`MAX_RESULT_DISPLAY_CHARS` (a long transcript must not freeze the browser)."""
    pairs = list(value.items()) if isinstance(value, dict) else [("", value)]
    if not pairs:
        return "none"
    lines = []
    for name, item in pairs:
        text = _value_text(item)
        label = f"**{escape_markdown(escape_invisible(str(name)).replace('_', ' '))}** " if name else ""
        lines.append(label + escape_markdown(text).replace("\n", "  \n"))
    shown = "  \n".join(lines)
    if len(shown) > MAX_RESULT_DISPLAY_CHARS:
        shown = shown[:MAX_RESULT_DISPLAY_CHARS].rstrip("\\") + f" … ({len(shown) - MAX_RESULT_DISPLAY_CHARS:,} more)"
    return shown


def render_tool_card(call: ToolCall, result: ToolResult | None) -> None:
    """Draw the card of ``call`` (with its ``result``, when one was recorded): its arguments and result as
    named lines, not raw JSON."""
    with st.expander(card_label(call, result), expanded=False, icon=card_icon(result)):
        st.caption("Arguments")
        st.markdown(readable_fields(call.args))
        if result is None:
            st.caption("No result was recorded for this call (the run was interrupted).")
        elif result.error is not None:
            st.error(escape_markdown(result.error), icon=":material/error:")  # it can quote the model's arguments
        else:
            st.caption("Result")
            st.markdown(readable_fields(result.result))


def _show_more(state: SessionState, key: str) -> None:
    state[key] = int(state.get(key, CARDS_SHOWN)) + CARDS_PAGE


def render_tool_cards(
    state: SessionState, message_id: str, calls: Sequence[ToolCall], results: Mapping[str, ToolResult]
) -> None:
    """The cards of one model message's ``calls``, the first :data:`CARDS_SHOWN` of them until "Show more"."""
    key = _SHOWN_KEY + message_id
    shown = int(state.get(key, CARDS_SHOWN))
    for call in calls[:shown]:
        render_tool_card(call, results.get(call.id))
    hidden = len(calls) - shown
    if hidden > 0:
        st.button(
            f"Show {min(hidden, CARDS_PAGE)} more of {count_of(hidden, 'hidden tool call')}",
            key=f"chat_more_cards_{message_id}",
            icon=":material/expand_more:",
            on_click=_show_more,
            args=(state, key),
            type="tertiary",
        )
