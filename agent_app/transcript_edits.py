"""What a user changed of a transcript: segment corrections (each beside the text it replaced) and the names
given to the speakers found. Kept by the storage per asset, apart from the machine's transcript in the cache,
so a transcript made again never loses them and they never pass for what the machine heard.
"""

from __future__ import annotations

from pydantic import Field

from agent_app.wire_model import WireModel

MAX_CORRECTION_CHARS = 5_000
"""A segment is a sentence or two; a correction far longer is a paste gone wrong, refused with a message."""
MAX_SPEAKER_NAME_CHARS = 60


class SegmentCorrection(WireModel):
    """The user's text for the segment starting at ``start_ms`` whose machine text was ``original``: applied
    only while the transcript still has that segment, so one made again (another model) is not mislabelled."""

    start_ms: int = Field(ge=0)
    original: str
    text: str


class TranscriptEdits(WireModel):
    """Every edit of one asset's transcript."""

    corrections: list[SegmentCorrection] = Field(default_factory=list)
    speaker_names: dict[str, str] = Field(default_factory=dict)
    """Speaker label (``S1``) to the name the user gave it."""


def checked_correction(text: str) -> str:
    """``text`` with its whitespace made single spaces; a ``ValueError`` a user can read when empty or too long."""
    cleaned = " ".join(text.split())
    if not cleaned:
        raise ValueError("A correction cannot be empty; use Restore to go back to what was heard")
    if len(cleaned) > MAX_CORRECTION_CHARS:
        raise ValueError(f"A correction is at most {MAX_CORRECTION_CHARS:,} characters (this one has {len(cleaned):,})")
    return cleaned


def checked_speaker_name(name: str) -> str:
    """``name`` trimmed (empty: the label is shown again); a ``ValueError`` when too long."""
    cleaned = " ".join(name.split())
    if len(cleaned) > MAX_SPEAKER_NAME_CHARS:
        raise ValueError(f"A speaker's name is at most {MAX_SPEAKER_NAME_CHARS} characters")
    return cleaned
