"""Why a file cannot give us its audio; each message is user-grade (no tracebacks, no paths)."""

from __future__ import annotations


class MediaError(Exception):
    """The media cannot give us its audio. The message is user-grade (no tracebacks, no paths)."""


class UnreadableMediaError(MediaError):
    """Not a media file FFmpeg can read, or damaged beyond decoding."""


class NoAudioStreamError(MediaError):
    """A readable file without any audio stream (a silent screen recording, an image)."""


class TruncatedMediaError(MediaError):
    """The file declares more audio than it contains: an interrupted upload or copy."""
