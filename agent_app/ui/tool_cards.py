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
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def render_tool_card(call: ToolCall, result: ToolResult | None) -> None:
    """Draw the card of ``call`` (with its ``result``, when one was recorded)."""
    with st.expander(card_label(call, result), expanded=False, icon=card_icon(result)):
        st.caption("Arguments")
        st.code(_json_text(call.args) if call.args else "{}", language="json", wrap_lines=True)
        if result is None:
            st.caption("No result was recorded for this call (the run was interrupted).")
        elif result.error is not None:
            st.error(escape_markdown(result.error), icon=":material/error:")  # it can quote the model's arguments
        else:
            st.caption("Result")
            text = _json_text(result.result)
            if len(text) > MAX_RESULT_DISPLAY_CHARS:
                text = (
                    text[:MAX_RESULT_DISPLAY_CHARS] + f"\n… ({len(text) - MAX_RESULT_DISPLAY_CHARS:,} more characters)"
                )
            st.code(text, language="json", wrap_lines=True)


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
