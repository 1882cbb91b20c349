"""Readers of the chat history's HTML (the bubbles the server makes for the history element), parsed with
:mod:`html.parser` as a browser would read them: entities decoded, tags dropped, attributes as the browser
gets them. Pure functions of an HTML string, so both the page tests and the unit tests use them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID_TAGS = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})
UNSAFE_SCHEMES = ("data:", "javascript:", "vbscript:", "file:")
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")


def browser_scheme_unsafe(url: str) -> bool:
    """Whether a browser would open ``url`` (an attribute value as parsed) with a scheme that runs code or a
    page of its own: it strips leading and trailing controls and spaces and drops tabs and line breaks anywhere
    before reading the scheme, which is case-insensitive (WHATWG URL parsing)."""
    cleaned = _TAB_OR_NEWLINE.sub("", url).strip("".join(map(chr, range(0x21))))
    return cleaned.lower().startswith(UNSAFE_SCHEMES)


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside every element, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None], list[str]]] = []
        self._open: list[int] = []  # indexes into ``tags`` of the elements still open

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs), []))
        if tag not in VOID_TAGS:
            self._open.append(len(self.tags) - 1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs), []))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self._open) - 1, -1, -1):  # close up to the matching open tag
            if self.tags[self._open[depth]][0] == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        for index in self._open:
            self.tags[index][2].append(data)


def parse(html: str) -> list[tuple[str, dict[str, str | None], str]]:
    """``(tag, attributes, text inside)`` of every element of ``html``."""
    reader = _Tags()
    reader.feed(html)
    reader.close()
    return [(tag, attrs, "".join(text)) for tag, attrs, text in reader.tags]


def tags(html: str) -> list[str]:
    """The names of every element of ``html`` (``"img"``, ``"a"``, …)."""
    return [tag for tag, _, _ in parse(html)]


def classed_texts(html: str, css_class: str) -> list[str]:
    """The text of each element of ``html`` carrying ``css_class``, as shown."""
    return [text for _, attrs, text in parse(html) if css_class in (attrs.get("class") or "").split()]


def link_targets(html: str) -> list[str]:
    """Every address an element of ``html`` points at: each ``href`` and ``src``, as the browser reads it."""
    return [str(attrs[name]) for _, attrs, _ in parse(html) for name in ("href", "src") if attrs.get(name) is not None]


@dataclass(frozen=True)
class ActionButton:
    """A button in the history: what it does (``data-act``), on which message, its text, whether enabled."""

    kind: str
    target: str
    label: str
    enabled: bool


def buttons_in(html: str) -> list[ActionButton]:
    """The history buttons of ``html``, in order."""
    return [
        ActionButton(str(attrs["data-act"]), str(attrs.get("data-target") or ""), text, "disabled" not in attrs)
        for tag, attrs, text in parse(html)
        if tag == "button" and attrs.get("data-act")
    ]


@dataclass(frozen=True)
class Card:
    """One tool card as drawn: its one-line label, how the call ended (its class: ``done``, ``failed``,
    ``pending``), the notes and the field blocks inside (arguments, result or error), and its HTML."""

    label: str
    state: str
    notes: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    html: str = ""


_CARD = re.compile(r"<details\b[^>]*>.*?</details>", re.DOTALL)  # cards are never nested


def cards_in(html: str) -> list[Card]:
    """The tool cards of ``html``, in order."""
    found = []
    for match in _CARD.finditer(html):
        card_html = match.group(0)
        elements = parse(card_html)
        _, attrs, _ = elements[0]
        classes = (attrs.get("class") or "").split()
        assert classes[0] == "card", card_html
        summary = next(text for tag, _, text in elements if tag == "summary")
        found.append(
            Card(
                label=" ".join(summary.split()),
                state=" ".join(classes[1:]),
                notes=classed_texts(card_html, "label"),
                fields=[t for t in classed_texts(card_html, "fields") if t not in classed_texts(card_html, "error")],
                errors=classed_texts(card_html, "error"),
                html=card_html,
            )
        )
    return found
