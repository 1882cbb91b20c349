"""How durations, sizes and times read on the page: short, human and stable."""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from agent_app.clock import clock_text

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~&:])")
"""Every ASCII character Markdown, GitHub's extensions or Streamlit give a meaning (links, images, emphasis,
code, headings, lists, tables, LaTeX, strikethrough, HTML, entities, ``:colour[…]`` and ``:emoji:``):
backslash-escaped, which Markdown shows as the character itself, so ``clip_1 (final).mp4`` reads as typed."""


def escape_markdown(text: str) -> str:
    """User- or model-chosen text (a file name, a title, a tool name) shown literally, never as Markdown,
    links, images or emoji shortcodes."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def count_of(count: int, noun: str) -> str:
    """``"1 segment"``, ``"2 segments"``, ``"0 segments"``: a count that reads as English."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_duration(milliseconds: int | None) -> str:
    """``83_000`` -> ``"1:23"``, ``3_723_000`` -> ``"1:02:03"``; ``None`` -> ``"–"`` (unknown)."""
    return "–" if milliseconds is None else clock_text(milliseconds)


def format_size(size_bytes: int | None) -> str:
    """Bytes in the largest unit that keeps the number below 1024, one decimal: ``"4.2 MB"``."""
    if size_bytes is None:
        return "–"
    size = float(size_bytes)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def local_time(timestamp_ms: int, zone: tzinfo) -> str:
    """A stored time (ms since the epoch) as the user's clock shows it: ``"30 Nov 2026, 14:05"``."""
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=zone).strftime("%d %b %Y, %H:%M").lstrip("0")
