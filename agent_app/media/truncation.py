"""Telling a file cut short (an interrupted upload or copy) from one whose audio simply ends early.

Half a transcript that looks complete is worse than an error, so a shortfall against the declared
length is an error; but only where the declaration is real (see :mod:`agent_app.media.declared_length`).
"""

from __future__ import annotations

from typing import Any

import av

from agent_app.media.audio_probe import MediaInfo
from agent_app.media.media_errors import TruncatedMediaError
from agent_app.media.sample_placement import SAMPLE_RATE

TRUNCATION_TOLERANCE_S = 0.5
"""Audio ending this much (or :data:`TRUNCATION_TOLERANCE_SHARE` of the decoded span, whichever is more)
earlier than the file declares means the file is cut short."""
TRUNCATION_TOLERANCE_SHARE = 0.01


def packet_end_s(packet: av.Packet[Any], origin_s: float) -> float:
    """Where a packet's content ends on the media's timeline (0 when it carries no time)."""
    stamp = packet.pts if packet.pts is not None else packet.dts
    if stamp is None or packet.time_base is None:
        return 0.0
    return float((stamp + (packet.duration or 0)) * packet.time_base) - origin_s


def expected_end_s(info: MediaInfo, end_s: float | None) -> float | None:
    """Where the audio of a decode that stops at ``end_s`` (``None``: the end) should end."""
    declared_ms = info.audio_duration_ms if info.audio_duration_ms is not None else info.duration_ms
    declared_s = declared_ms / 1000 if declared_ms is not None else None
    if end_s is None:
        return declared_s
    return min(end_s, declared_s) if declared_s is not None else end_s


def check_complete(
    info: MediaInfo, start_s: float, expected_end_s: float | None, count: int, last_packet_end_s: float
) -> None:
    """A file whose audio stops well before its declared end was cut short: say so rather than
    return half a transcript that looks complete. When only the container declares a length (WebM,
    Matroska), the audio may legitimately end before the video: then the file is cut only if no stream
    at all reaches the end."""
    if expected_end_s is None or not info.length_exact:
        return
    got_end_s = start_s + count / SAMPLE_RATE
    if info.audio_duration_ms is None:
        got_end_s = max(got_end_s, last_packet_end_s)
    if expected_end_s - got_end_s > max(
        TRUNCATION_TOLERANCE_S, TRUNCATION_TOLERANCE_SHARE * (expected_end_s - start_s)
    ):
        raise TruncatedMediaError(
            f"the file is incomplete: its audio stops at {got_end_s:.1f} s but should last until "
            f"{expected_end_s:.1f} s (an interrupted upload or copy?)"
        )
