"""Chat text as safe HTML for the history element: the model's Markdown rendered, the user's words as typed.

Everything the model or a user wrote is escaped by markdown-it (raw HTML off, so ``<script>`` is text);
what this module adds on top:

* images become ordinary links: ``![x](https://host/p.png?data=…)`` would otherwise make the browser fetch
  that address as soon as the answer is drawn (a model steered by a hostile transcript could send the
  conversation to any host without a click);
* no link to a ``data:``, ``javascript:``, ``vbscript:`` or ``file:`` address, however the scheme is spelled
  (markdown-it decodes entities and escapes first; tabs, line breaks and controls are dropped as a browser
  does, percent-escaped ones too): such a link is left as text;
* links open in a new tab, with no referrer and no access to this page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

_UNSAFE_SCHEMES = ("data:", "javascript:", "vbscript:", "file:")
_SCHEME_NOISE = re.compile(r"[\x00-\x20]+")
_LINK_ATTRIBUTES = {"target": "_blank", "rel": "noopener noreferrer nofollow"}


def is_safe_link(url: str) -> bool:
    """Whether ``url`` (as markdown-it decoded and percent-encoded it) may be a link: not a scheme that runs code
    or a page of its own, read with its percent-escapes decoded too (a control written ``&#9;`` reaches here as
    ``%09``)."""
    return not _SCHEME_NOISE.sub("", unquote(url)).lower().startswith(_UNSAFE_SCHEMES)


def _image_as_link(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image drawn as a link to its address, its alt text (or the address) as the link's text."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{html.escape(src)}" target="_blank" rel="noopener noreferrer nofollow">{html.escape(alt)}</a>'


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    for name, value in _LINK_ATTRIBUTES.items():
        tokens[idx].attrSet(name, value)
    return renderer.renderToken(tokens, idx, options, env)


def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    parser.validateLink = is_safe_link  # type: ignore[method-assign]
    parser.add_render_rule("image", _image_as_link)
    parser.add_render_rule("link_open", _link_open)
    return parser


_MARKDOWN = _parser()


def answer_html(text: str) -> str:
    """The model's Markdown (CommonMark, tables, strikethrough) as HTML, safe to set as a bubble's content."""
    return str(_MARKDOWN.render(text))


def typed_html(text: str) -> str:
    """The user's own message exactly as typed: every character literal, line breaks and leading spaces kept
    (the bubble's ``white-space: pre-wrap`` shows them)."""
    return f'<p class="typed">{html.escape(text)}</p>'


def text_html(text: str) -> str:
    """Plain text of our own (a caption, a label) for HTML: escaped, nothing more."""
    return html.escape(text)


def attributes(values: dict[str, Any]) -> str:
    """``name="value"`` pairs, each value escaped for an attribute."""
    return " ".join(f'{name}="{html.escape(str(value), quote=True)}"' for name, value in values.items())
