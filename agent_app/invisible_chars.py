"""Characters that hide or reorder text: what a name or a prompt must never carry raw.

``clip\u202egnp.mp4`` *shows* as ``clip4pm.png``; zero-width characters hide text; line and paragraph
separators break a line where none is seen. Storage removes them from names; the prompt and tool
results show the model their ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import re

INVISIBLE_CHARACTERS = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)
"""C0 controls but tab and line breaks (ordinary whitespace), C1 controls, the soft hyphen, the Arabic
letter mark, zero-width characters and direction marks, line/paragraph separators, bidirectional embeddings,
overrides and isolates (U+202A-U+202E, U+2066-U+2069: they make text read in another order than it is
written), invisible operators, BOM."""


def strip_invisible(text: str) -> str:
    """``text`` without any of :data:`INVISIBLE_CHARACTERS`."""
    return INVISIBLE_CHARACTERS.sub("", text)


def escape_invisible(text: str) -> str:
    """``text`` with each of :data:`INVISIBLE_CHARACTERS` written as its ``\\uXXXX`` escape: the model
    reads the characters that are there, in the order they are stored."""
    return INVISIBLE_CHARACTERS.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
