"""Chat text (the model's answers, the user's messages) made safe to hand to ``st.markdown``.

Streamlit's markdown never runs HTML (``unsafe_allow_html`` is never used with chat text) and drops
``javascript:`` links, but it does load images: ``![x](https://host/p.png?data=…)`` in an answer makes
the browser fetch that address as soon as the answer is drawn. A model steered by a hostile transcript
or file name could use that to send the conversation to any host, without a click. Images are
therefore turned into ordinary links (shown, followed only if the user clicks). Code blocks and code
spans are left exactly as written: there ``![`` is just text.
"""

from __future__ import annotations

import re

from agent_app.ui.formatting import escape_markdown

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
_IMAGE_START = re.compile(r"(?<!\\)!\[")


def _unimage(text: str) -> str:
    """``![alt](url)`` -> ``[alt](url)`` outside code spans."""
    parts: list[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        parts.append(_IMAGE_START.sub("[", text[position : span.start()]))
        parts.append(span.group(0))
        position = span.end()
    parts.append(_IMAGE_START.sub("[", text[position:]))
    return "".join(parts)


def chat_markdown(text: str) -> str:
    """``text`` with every Markdown image made a link; fenced code blocks untouched."""
    lines = text.split("\n")
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in lines:
        marker = _FENCE.match(line)
        if fence is None and marker is not None:
            if prose:
                out.append(_unimage("\n".join(prose)))
                prose = []
            fence = marker.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            closing = marker is not None and line.strip() == marker.group(1)
            if closing and marker is not None and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
        else:
            prose.append(line)
    if prose:
        out.append(_unimage("\n".join(prose)))
    return "\n".join(out)


def typed_markdown(text: str) -> str:
    """The user's own message as they typed it, for ``st.markdown``: every Markdown character escaped (``# ``
    is not a heading, ``$…$`` is not math, ``1.`` is not a list), each line break kept as a hard break and
    leading spaces kept (an indented line is not a code block)."""
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lines.append("\u00a0" * (len(line) - len(body)) + escape_markdown(body))
    return "  \n".join(lines)
