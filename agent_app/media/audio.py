"""Audio extraction with PyAV: any file FFmpeg reads → 16 kHz mono float32 samples, streamed.

Why PyAV: its wheel ships FFmpeg's libraries, so no system ``ffmpeg`` is needed on a fresh machine or on
Streamlit Community Cloud. Why streaming: a video can be gigabytes while its speech at 16 kHz mono float32
is about 3.8 MB a minute, so we demux only the audio stream packet by packet and keep only resampled audio.

Timestamps: samples are placed by the decoded frames' presentation times, not by counting from the first
packet. FFmpeg's MP4 demuxer applies the edit list and drops the AAC encoder delay (priming samples), so
the first decoded frame of a normal file starts at 0; when audio starts later than the media (an offset
edit list, a delayed track) we pad with silence, and samples before 0 are dropped. This keeps "second N of
the transcript" equal to "second N in the player".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import av.error
import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
"""What every transcriber here consumes: 16 kHz mono float32 in [-1, 1]."""

_TRUNCATION_TOLERANCE_S = 1.0
"""Audio ending this much earlier than the stream declares means the file is cut short."""

FloatArray = npt.NDArray[np.float32]


class MediaError(Exception):
    """The media cannot give us its audio. The message is user-grade (no tracebacks, no paths)."""


class UnreadableMediaError(MediaError):
    """Not a media file FFmpeg can read, or damaged beyond decoding."""


class NoAudioStreamError(MediaError):
    """A readable file without any audio stream (a silent screen recording, an image)."""


class TruncatedMediaError(MediaError):
    """The file declares more audio than it contains: an interrupted upload or copy."""


@dataclass(frozen=True)
class MediaInfo:
    """What we know about a file's audio before decoding it."""

    duration_ms: int | None
    """The media's duration (container, else audio stream), ``None`` when the file does not say."""
    audio_duration_ms: int | None
    """The audio stream's declared duration, when known."""
    sample_rate: int
    channels: int
    codec: str


@dataclass(frozen=True)
class AudioClip:
    """Decoded speech ready for a transcriber; times are milliseconds on the media's own timeline."""

    samples: FloatArray
    sample_rate: int
    start_ms: int
    """Where ``samples[0]`` sits in the media."""
    media_duration_ms: int
    """The whole media's duration (not the clip's), for clamping segment times."""

    @property
    def duration_ms(self) -> int:
        return round(len(self.samples) * 1000 / self.sample_rate)

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.duration_ms


def _seconds(value: int | None, time_base: Fraction | None) -> float | None:
    if value is None or time_base is None:
        return None
    return float(value * time_base)


def _open(path: Path) -> av.container.InputContainer:
    if not path.is_file():
        raise UnreadableMediaError("the media file is missing from the project's storage")
    try:
        return av.open(str(path), mode="r")
    except av.error.FFmpegError as exc:
        raise UnreadableMediaError(f"the file is not a readable audio or video file ({_reason(exc)})") from exc


def _reason(exc: av.error.FFmpegError) -> str:
    """FFmpeg's own short reason (e.g. 'Invalid data found when processing input'), without the path."""
    return str(getattr(exc, "strerror", None) or type(exc).__name__)


def _info(container: av.container.InputContainer) -> MediaInfo:
    if not container.streams:
        # An MP4 whose index (moov) was never written or got cut off opens with no streams at all.
        raise UnreadableMediaError("the file is damaged or incomplete: it holds no readable audio or video streams")
    if not container.streams.audio:
        raise NoAudioStreamError("the file has no audio stream, so there is no speech to transcribe")
    stream = container.streams.audio[0]
    audio_s = _seconds(stream.duration, stream.time_base)
    container_s = container.duration / av.time_base if container.duration is not None else None
    duration_s = container_s if container_s is not None else audio_s
    codec = stream.codec_context
    return MediaInfo(
        duration_ms=round(duration_s * 1000) if duration_s is not None else None,
        audio_duration_ms=round(audio_s * 1000) if audio_s is not None else None,
        sample_rate=int(codec.sample_rate or 0),
        channels=int(codec.channels or 0),
        codec=str(codec.name),
    )


def probe_media(path: Path) -> MediaInfo:
    """Duration and audio format of ``path``; raises a :class:`MediaError` subclass when unusable."""
    with _open(path) as container:
        return _info(container)


class _SampleSink:
    """Collects resampled frames at their presentation times: pads gaps before the first frame with
    silence and drops what falls before the requested start or after the requested end."""

    def __init__(self, start_s: float, end_s: float | None) -> None:
        self._start = round(start_s * SAMPLE_RATE)
        self._end = round(end_s * SAMPLE_RATE) if end_s is not None else None
        self._next: int | None = None  # absolute sample index where the next frame goes
        self.chunks: list[FloatArray] = []
        self.count = 0

    @property
    def position_s(self) -> float:
        return (self._start + self.count) / SAMPLE_RATE

    @property
    def done(self) -> bool:
        return self._end is not None and self._start + self.count >= self._end

    def add(self, samples: FloatArray, time_s: float | None) -> None:
        if self._next is None:
            self._next = round(time_s * SAMPLE_RATE) if time_s is not None else 0
        first, self._next = self._next, self._next + len(samples)
        begin = max(first, self._start + self.count)
        end = self._next if self._end is None else min(self._next, self._end)
        if end <= begin:
            return
        gap = begin - (self._start + self.count)
        if gap > 0:  # audio starts after the requested start: silence keeps times aligned
            self._append(np.zeros(gap, dtype=np.float32))
        self._append(samples[begin - first : end - first])

    def _append(self, samples: FloatArray) -> None:
        self.chunks.append(np.ascontiguousarray(samples, dtype=np.float32))
        self.count += len(samples)

    def collect(self) -> FloatArray:
        if not self.chunks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self.chunks)


def extract_audio(
    path: Path,
    start_ms: int | None = None,
    end_ms: int | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> AudioClip:
    """The audio of ``path`` (optionally only ``[start_ms, end_ms)``) as 16 kHz mono float32.

    Only the first audio stream is demuxed; video packets are never decoded. Raises
    :class:`UnreadableMediaError`, :class:`NoAudioStreamError` or :class:`TruncatedMediaError`.
    """
    with _open(path) as container:
        info = _info(container)
        stream = container.streams.audio[0]
        stream.codec_context.thread_type = "AUTO"
        start_s = max(0, start_ms or 0) / 1000
        end_s = end_ms / 1000 if end_ms is not None else None
        if start_s > 0 and stream.time_base is not None:
            # Seek to the keyframe before the start; the sink trims the samples before it.
            container.seek(int(start_s / stream.time_base), stream=stream, backward=True, any_frame=False)
        expected_end_s = _expected_end_s(info, end_s)
        sink = _SampleSink(start_s, end_s)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        try:
            for packet in container.demux(stream):
                for frame in packet.decode():
                    time_s = _seconds(frame.pts, frame.time_base)
                    for out in resampler.resample(frame):
                        sink.add(_mono(out), time_s)
                        time_s = None
                if on_progress is not None and expected_end_s:
                    on_progress(min(1.0, max(0.0, (sink.position_s - start_s) / max(expected_end_s - start_s, 1e-3))))
                if sink.done:
                    break
            else:
                for out in resampler.resample(None):
                    sink.add(_mono(out), None)
        except av.error.FFmpegError as exc:
            raise UnreadableMediaError(
                f"the audio could not be decoded after {sink.position_s:.1f} s ({_reason(exc)}); "
                "the file is probably damaged"
            ) from exc
        samples = sink.collect()
    _check_complete(info, start_s, expected_end_s, len(samples))
    media_ms = info.duration_ms if info.duration_ms is not None else round(start_s * 1000) + len(samples) // 16
    return AudioClip(
        samples=samples, sample_rate=SAMPLE_RATE, start_ms=round(start_s * 1000), media_duration_ms=media_ms
    )


def _mono(frame: av.AudioFrame) -> FloatArray:
    """A resampled (packed float, mono) frame as a flat float32 array."""
    return np.asarray(frame.to_ndarray(), dtype=np.float32).reshape(-1)


def _expected_end_s(info: MediaInfo, end_s: float | None) -> float | None:
    declared_ms = info.audio_duration_ms if info.audio_duration_ms is not None else info.duration_ms
    declared_s = declared_ms / 1000 if declared_ms is not None else None
    if end_s is None:
        return declared_s
    return min(end_s, declared_s) if declared_s is not None else end_s


def _check_complete(info: MediaInfo, start_s: float, expected_end_s: float | None, count: int) -> None:
    """A file whose audio stops well before its declared end was cut short: say so rather than
    return half a transcript that looks complete."""
    if expected_end_s is None or info.audio_duration_ms is None:
        return
    got_end_s = start_s + count / SAMPLE_RATE
    if expected_end_s - got_end_s > max(_TRUNCATION_TOLERANCE_S, 0.05 * (expected_end_s - start_s)):
        raise TruncatedMediaError(
            f"the file is incomplete: its audio stops at {got_end_s:.1f} s but should last until "
            f"{expected_end_s:.1f} s (an interrupted upload or copy?)"
        )
