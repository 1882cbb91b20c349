"""What a file's audio is before decoding it: which stream, how long, where its timeline starts.

Timestamps: samples are placed by the decoded frames' presentation times (see
:mod:`agent_app.media.sample_placement`), so the origin matters: MPEG-TS files continue a running clock
and start at 0:00 in a player, while MP4/MOV/WebM/MKV/Ogg times are kept as written.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import av.error

from agent_app.media.declared_length import length_is_exact, wav_declared_s
from agent_app.media.media_errors import NoAudioStreamError, UnreadableMediaError
from agent_app.media.stream_choice import choose_audio_stream

_RUNNING_CLOCK_FORMATS = frozenset({"mpegts", "mpeg", "mpegvideo"})
"""Formats whose timestamps continue a broadcast or camera clock (an MPEG-TS may start at 26 000 s):
players show their start as 0:00, so we do too. MP4/MOV/WebM/MKV/Ogg times are kept as written: a file
that starts with an empty edit really starts with nothing in the player."""


@dataclass(frozen=True)
class MediaInfo:
    """What we know about a file's audio before decoding it."""

    duration_ms: int | None
    """The media's duration (container, else audio stream), ``None`` when the file does not say."""
    audio_duration_ms: int | None
    """The audio stream's declared duration, when known."""
    stream_index: int = 0
    """Which of the file's audio streams (0-based among audio streams) is transcribed."""
    origin_s: float = 0.0
    """The media's start time: time 0 in a player (MPEG-TS starts at a running clock's timestamp)."""
    length_exact: bool = True
    """Whether the declared length is written in the file (not estimated), so a shortfall means damage."""


def seconds(value: int | None, time_base: Fraction | None) -> float | None:
    """A PyAV timestamp in seconds, ``None`` when it has no time."""
    if value is None or time_base is None:
        return None
    return float(value * time_base)


def open_media(path: Path) -> av.container.InputContainer:
    """``path`` opened for reading; a missing or unreadable file is an :class:`UnreadableMediaError`."""
    if not path.is_file():
        raise UnreadableMediaError("the media file is missing from the project's storage")
    try:
        return av.open(str(path), mode="r")
    except av.error.FFmpegError as exc:
        raise UnreadableMediaError(f"the file is not a readable audio or video file ({ffmpeg_reason(exc)})") from exc


def has_audio_stream(path: Path) -> bool:
    """Whether ``path`` holds an audio stream (a screen recording often has none: nothing to transcribe);
    an unreadable file counts as none."""
    try:
        with contextlib.closing(open_media(path)) as container:
            return bool(container.streams.audio)
    except UnreadableMediaError:
        return False


def ffmpeg_reason(exc: av.error.FFmpegError) -> str:
    """FFmpeg's own short reason (e.g. 'Invalid data found when processing input'), without the path."""
    return str(getattr(exc, "strerror", None) or type(exc).__name__)


def media_info(container: av.container.InputContainer, path: Path) -> MediaInfo:
    """The audio facts of an open file; raises when it has no readable streams or no audio at all."""
    if not container.streams:
        # An MP4 whose index (moov) was never written or got cut off opens with no streams at all.
        raise UnreadableMediaError("the file is damaged or incomplete: it holds no readable audio or video streams")
    if not container.streams.audio:
        raise NoAudioStreamError("the file has no audio stream, so there is no speech to transcribe")
    index = choose_audio_stream(container)
    stream = container.streams.audio[index]
    audio_s = seconds(stream.duration, stream.time_base)
    if (container.format.name or "") == "wav":
        audio_s = wav_declared_s(path, stream) or audio_s
    container_s = container.duration / av.time_base if container.duration is not None else None
    start_s = container.start_time / av.time_base if container.start_time else 0.0
    origin_s = start_s if _RUNNING_CLOCK_FORMATS.intersection((container.format.name or "").split(",")) else 0.0
    # FFmpeg's durations are spans from a start; the player's timeline runs from origin to start + span.
    if container_s is not None:
        container_s += max(0.0, start_s - origin_s)
    if audio_s is not None:
        audio_s += max(0.0, (seconds(stream.start_time, stream.time_base) or 0.0) - origin_s)
    duration_s = container_s if container_s is not None else audio_s
    return MediaInfo(
        duration_ms=round(duration_s * 1000) if duration_s is not None else None,
        audio_duration_ms=round(audio_s * 1000) if audio_s is not None else None,
        stream_index=index,
        origin_s=max(0.0, origin_s),
        length_exact=length_is_exact(container, path),
    )
