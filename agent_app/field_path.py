"""How every message of ours names a place in JSON data: ``messages[3].toolCalls[0].id``, from a pydantic
error's ``loc`` or from the keys and indexes we walked."""

from __future__ import annotations

from collections.abc import Iterable


def field_path(location: Iterable[int | str]) -> str:
    """Keys joined by dots, indexes in brackets (``("messages", 3, "content")`` → ``messages[3].content``)."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path
