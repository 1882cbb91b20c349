"""A user's own message as Markdown that shows exactly what they typed (the conversation's Markdown export).

The chat itself draws its text as HTML made on the server (:mod:`~agent_app.ui.chat_html`); a Markdown file
read elsewhere still needs the user's ``# ``, ``$…$`` or ``1.`` kept as typed, not rendered.
"""

from __future__ import annotations

from agent_app.ui.formatting import escape_markdown


def typed_markdown(text: str) -> str:
    """The user's own message as they typed it, as Markdown: every Markdown character escaped (``# ``
    is not a heading, ``$…$`` is not math, ``1.`` is not a list), each line break kept as a hard break and
    leading spaces kept (an indented line is not a code block)."""
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lines.append("\u00a0" * (len(line) - len(body)) + escape_markdown(body))
    return "  \n".join(lines)
