"""One tool call as a compact card: name, arguments, result or error, how long it took.

Cards are collapsed ``<details>`` in the bubble's HTML (:mod:`~agent_app.ui.history_element`), so a turn
with several calls stays one screen;
a card of a call that never got a result (the run was interrupted) says so instead of pretending.
A model message with many calls (a broken or hostile model can ask for a thousand) draws its first
:data:`CARDS_SHOWN` cards and a "Show more" button that adds the next :data:`CARDS_PAGE`, so opening
such a conversation costs what a short one does.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_app.clock import elapsed_text
from agent_app.invisible_chars import escape_invisible
from agent_app.orchestrator_options import MAX_CALLS_PER_ROUND
from agent_app.session_stores import SessionState
from agent_app.types import ToolCall, ToolResult
from agent_app.ui.chat_html import attributes
from agent_app.ui.formatting import count_of

MAX_RESULT_DISPLAY_CHARS = 20_000
"""Beyond this a result is shown as truncated text: a long transcript must not freeze the browser."""
CARDS_SHOWN = MAX_CALLS_PER_ROUND
"""Cards drawn at first for one model message: as many as the calls that can run in one turn."""
CARDS_PAGE = 50
"""Cards each "Show more" adds."""
_SHOWN_KEY = "chat.cards_shown."


def _ending(result: ToolResult | None) -> str:
    """How the call ended, and in how long: ``done · 2.4 s``, ``failed · 12 ms``, ``no result``."""
    if result is None:
        return "no result"
    state = card_state(result)
    return f"{state} · {elapsed_text(result.duration_ms)}" if result.duration_ms is not None else state


def card_label(call: ToolCall, result: ToolResult | None) -> str:
    """The one-line summary shown on the collapsed card, as text: the model's tool name shown literally, its
    controls and direction marks as ``\\uXXXX`` (a U+202E would flip the rest of the label, an ESC or NUL is
    not text)."""
    return f"{escape_invisible(call.name)} · {_ending(result)}"


def card_state(result: ToolResult | None) -> str:
    """The card's class: how the call ended."""
    if result is None:
        return "pending"
    return "failed" if result.error is not None else "done"


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
    """Arguments or a result as HTML lines ``<b>name</b> value``, every name and value shown literally, the whole
    cut at :data:`MAX_RESULT_DISPLAY_CHARS` characters of text (a long transcript must not freeze the browser)."""
    pairs = list(value.items()) if isinstance(value, dict) else [("", value)]
    if not pairs:
        return "none"
    lines: list[str] = []
    budget = MAX_RESULT_DISPLAY_CHARS
    for name, item in pairs:
        label = escape_invisible(str(name)).replace("_", " ")
        text = _value_text(item)
        if len(text) > budget:
            text = text[:budget] + f" … ({len(text) - budget:,} more)"
        budget = max(0, budget - len(text))
        lines.append((f"<b>{html.escape(label)}</b> " if name else "") + html.escape(text))
        if budget == 0:
            break
    return "\n".join(lines)


def tool_card_html(call: ToolCall, result: ToolResult | None) -> str:
    """The card of ``call`` (with its ``result``, when one was recorded), collapsed: its arguments and result
    as named lines, not raw JSON."""
    inside = ['<div class="label">Arguments</div>', f'<div class="fields">{readable_fields(call.args)}</div>']
    if result is None:
        inside.append('<div class="label">No result was recorded for this call (the run was interrupted).</div>')
    elif result.error is not None:
        inside.append(f'<div class="fields error">{html.escape(result.error)}</div>')
    else:
        inside += ['<div class="label">Result</div>', f'<div class="fields">{readable_fields(result.result)}</div>']
    card = attributes({"class": f"card {card_state(result)}", "data-call": call.id})  # the id keeps it open
    return (
        f"<details {card}><summary><b>{html.escape(escape_invisible(call.name))}</b> "
        f'<span class="state">· {html.escape(_ending(result))}</span></summary><div>{"".join(inside)}</div></details>'
    )


def tool_cards_html(
    state: SessionState, message_id: str, calls: Sequence[ToolCall], results: Mapping[str, ToolResult]
) -> str:
    """The cards of one model message's ``calls``, the first :data:`CARDS_SHOWN` of them until "show more"."""
    shown = int(state.get(_SHOWN_KEY + message_id, CARDS_SHOWN))
    cards = [tool_card_html(call, results.get(call.id)) for call in calls[:shown]]
    hidden = len(calls) - shown
    if hidden > 0:
        cards.append(
            f'<div class="actions"><button data-act="more_cards" data-target="{html.escape(message_id)}">'
            f"Show {min(hidden, CARDS_PAGE)} more of {count_of(hidden, 'hidden tool call')}</button></div>"
        )
    return "".join(cards)


def show_more_cards(state: SessionState, message_id: str) -> None:
    """The next :data:`CARDS_PAGE` cards of that message."""
    key = _SHOWN_KEY + message_id
    state[key] = int(state.get(key, CARDS_SHOWN)) + CARDS_PAGE
