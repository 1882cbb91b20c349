"""Names and titles as they are stored and shown: no invisible characters, bounded length."""

from __future__ import annotations

import unicodedata

from agent_app.invisible_chars import strip_invisible

MAX_NAME_LENGTH = 200
TITLE_LENGTH = 60


def clean_name(name: str, fallback: str) -> str:
    """A display name: invisible and direction-changing characters removed, whitespace collapsed,
    bounded length, ``fallback`` when blank."""
    collapsed = " ".join(strip_invisible(name).split())
    return collapsed[:MAX_NAME_LENGTH] or fallback


def display_file_name(file_name: str) -> str:
    """The base name of an uploaded file, for display only (it never becomes a path). A name longer than
    :data:`MAX_NAME_LENGTH` loses the end of its stem, never its extension (which says what the file is)."""
    base = " ".join(strip_invisible(file_name.replace("\\", "/").rsplit("/", 1)[-1]).split())
    if len(base) <= MAX_NAME_LENGTH:
        return base or "untitled"
    stem, dot, extension = base.rpartition(".")
    if not dot or not stem or len(extension) > 10:  # no real extension to keep
        return base[:MAX_NAME_LENGTH]
    return stem[: MAX_NAME_LENGTH - len(extension) - 2].rstrip() + "…." + extension


def title_from(content: str) -> str:
    """A conversation title from its first question: its first line, invisible characters dropped,
    whitespace collapsed, cut at a word (not mid-word) with an ellipsis when longer than a sidebar line."""
    first_line = next((line for line in content.splitlines() if line.strip()), "")
    collapsed = " ".join(strip_invisible(first_line).split())
    if len(collapsed) <= TITLE_LENGTH:
        return collapsed
    cut = collapsed[: TITLE_LENGTH - 1]
    if collapsed[TITLE_LENGTH - 1] != " " and " " in cut[TITLE_LENGTH // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:.-") + "…"


def fold_text(text: str | None) -> str:
    """Lower case without accents, for matching what a user types against what was said."""
    if not text:
        return ""
    if text.isascii():
        return text.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def like_escape(text: str) -> str:
    """``text`` matched literally inside an SQL ``LIKE … ESCAPE '\\'`` pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
