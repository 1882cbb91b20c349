"""Names and titles as they are stored and shown: no invisible characters, bounded length."""

from __future__ import annotations

from agent_app.invisible_chars import strip_invisible

MAX_NAME_LENGTH = 200
TITLE_LENGTH = 80


def clean_name(name: str, fallback: str) -> str:
    """A display name: invisible and direction-changing characters removed, whitespace collapsed,
    bounded length, ``fallback`` when blank."""
    collapsed = " ".join(strip_invisible(name).split())
    return collapsed[:MAX_NAME_LENGTH] or fallback


def display_file_name(file_name: str) -> str:
    """The base name of an uploaded file, for display only (it never becomes a path)."""
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    return clean_name(base, "untitled")


def title_from(content: str) -> str:
    """A conversation title from its first message: whitespace collapsed, cut with an ellipsis."""
    collapsed = " ".join(content.split())
    return collapsed if len(collapsed) <= TITLE_LENGTH else collapsed[: TITLE_LENGTH - 1] + "…"
