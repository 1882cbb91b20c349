"""Chat text (the model's answers, the user's messages) made safe to hand to ``st.markdown``.

Streamlit's markdown never runs HTML (``unsafe_allow_html`` is never used with chat text) and drops
``javascript:`` links, but it does load images: ``![x](https://host/p.png?data=…)`` in an answer makes
the browser fetch that address as soon as the answer is drawn. A model steered by a hostile transcript
or file name could use that to send the conversation to any host, without a click. Images are
therefore turned into ordinary links (shown, followed only if the user clicks). Code blocks and code
spans are left exactly as written: there ``![`` is just text. Links to ``data:``, ``vbscript:`` or
``javascript:`` addresses (a ``data:text/html`` page runs script when opened) are shown as text, not links,
however their scheme is spelled (entities, backslash escapes, case, spaces): CommonMark decodes those first.
"""

from __future__ import annotations

import html
import re

from agent_app.ui.formatting import escape_markdown

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
_IMAGE_START = re.compile(r"(?<!\\)!\[")
_LINK_OPENER = re.compile(r"\]\(|\]:|<")
"""Where a link's address begins: an inline link ``[t](…)``, a reference definition ``[r]: …``, an autolink ``<…>``
(one that looks escaped is checked too: in ``\\\\](`` the backslash is itself escaped, the opener real)."""
_UNSAFE_SCHEMES = ("data:", "vbscript:", "javascript:")
_SCHEME_WINDOW = 120
"""Characters read after an opener to decide its scheme (entities make ``data:`` up to ~60 characters long)."""
_ESCAPED_PUNCTUATION = re.compile(r"\\([!-/:-@\[-`{-~])")
_SCHEME_NOISE = re.compile(r"[\x00-\x20<]+")


def _has_unsafe_scheme(address: str) -> bool:
    """Whether ``address`` (the text after a link opener) starts, once CommonMark has decoded it, with a scheme
    that runs code or a page of its own; a browser also drops tabs, line breaks and controls inside a scheme."""
    decoded = _ESCAPED_PUNCTUATION.sub(r"\1", html.unescape(address))
    return _SCHEME_NOISE.sub("", decoded).lower().startswith(_UNSAFE_SCHEMES)


def _unlink_unsafe(text: str) -> str:
    """Each link opener followed by an unsafe address gets its last character escaped: text, not a link."""

    def neutralised(opener: re.Match[str]) -> str:
        if not _has_unsafe_scheme(text[opener.end() : opener.end() + _SCHEME_WINDOW]):
            return opener.group(0)
        return opener.group(0)[:-1] + "\\" + opener.group(0)[-1]

    return _LINK_OPENER.sub(neutralised, text)


def _safe_prose(text: str) -> str:
    return _unlink_unsafe(_IMAGE_START.sub("[", text))


def _unimage(text: str) -> str:
    """``![alt](url)`` -> ``[alt](url)`` and unsafe links made text, outside code spans."""
    parts: list[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        parts.append(_safe_prose(text[position : span.start()]))
        parts.append(span.group(0))
        position = span.end()
    parts.append(_safe_prose(text[position:]))
    return "".join(parts)


def chat_markdown(text: str) -> str:
    """``text`` with every Markdown image made a link and unsafe links made text; fenced code blocks untouched."""
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
