"""How long a file says its audio is, read from the bytes FFmpeg does not trust or does not expose.

A file cut short is recognised by comparing what it declares with what decodes, so the declaration
must be real: FFmpeg quietly shortens a WAV to the bytes present (we read the header's data size),
and an MP3 without a Xing/Info/VBRI header only has a length estimated from its bitrate.
"""

from __future__ import annotations

from pathlib import Path

import av

_ESTIMATED_LENGTH_FORMATS = ("mpegts", "aac", "mp3")
"""Demuxers whose length may be an estimate from the bitrate (an MP3 without a Xing/Info/VBRI header):
a shortfall there proves nothing, so it is not called truncation."""


def length_is_exact(container: av.container.InputContainer, path: Path) -> bool:
    """Whether the declared length is written in the file (not estimated), so a shortfall means damage."""
    names = (container.format.name or "").split(",")
    if not any(name in _ESTIMATED_LENGTH_FORMATS for name in names):
        return True
    if "mp3" in names:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
            if head[:3] == b"ID3" and len(head) >= 10:  # skip the tag: its syncsafe size is in bytes 6..9
                handle.seek(10 + ((head[6] << 21) | (head[7] << 14) | (head[8] << 7) | head[9]))
                head = handle.read(1 << 12)
        return any(marker in head[:4096] for marker in (b"Xing", b"Info", b"VBRI"))
    return False


def wav_declared_s(path: Path, stream: av.AudioStream) -> float | None:
    """The length a WAV header promises. FFmpeg quietly shortens a WAV to the bytes present, so a copy
    cut short would otherwise look complete; streaming writers put 0 or 0xFFFFFFFF there (unknown)."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    position = 12
    while position + 8 <= len(head):
        chunk, size = head[position : position + 4], int.from_bytes(head[position + 4 : position + 8], "little")
        if chunk == b"data":
            codec = stream.codec_context
            block = (codec.channels or 0) * (codec.format.bytes if codec.format is not None else 0)
            if size in (0, 0xFFFFFFFF) or block <= 0 or not codec.sample_rate:
                return None
            return size / block / codec.sample_rate
        position += 8 + size + (size & 1)
    return None
