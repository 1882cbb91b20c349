"""Audio extraction with PyAV: any file FFmpeg reads → 16 kHz mono float32 samples, streamed.

Why PyAV: its wheel ships FFmpeg's libraries, so no system ``ffmpeg`` is needed on a fresh machine or on
Streamlit Community Cloud. Why streaming: a video can be gigabytes while its speech at 16 kHz mono float32
is about 3.8 MB a minute, so we demux only the audio stream packet by packet, and :class:`AudioSource`
hands the resampled audio on piece by piece: an hour-long file costs no more memory than a minute.

Timestamps: samples are placed by the decoded frames' presentation times, not by counting from the first
packet. FFmpeg's MP4 demuxer applies the edit list and drops the AAC encoder delay (priming samples), so
the first decoded frame of a normal file starts at 0; when audio starts later than the media (an offset
edit list, a delayed track) we pad with silence, and samples before 0 are dropped. This keeps "second N of
the transcript" equal to "second N in the player".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

import av
import av.error
import numpy as np

from agent_app.media.chunking import FloatArray, rechunk
from agent_app.media.downmix import downmix
from agent_app.media.stream_choice import choose_audio_stream

SAMPLE_RATE = 16_000
"""What every transcriber here consumes: 16 kHz mono float32 in [-1, 1]."""

_TRUNCATION_TOLERANCE_S = 0.5
"""Audio ending this much (or 1 %) earlier than the file declares means the file is cut short."""
_RUNNING_CLOCK_FORMATS = frozenset({"mpegts", "mpeg", "mpegvideo"})
"""Formats whose timestamps continue a broadcast or camera clock (an MPEG-TS may start at 26 000 s):
players show their start as 0:00, so we do too. MP4/MOV/WebM/MKV/Ogg times are kept as written: a file
that starts with an empty edit really starts with nothing in the player."""
_ESTIMATED_LENGTH_FORMATS = ("mpegts", "aac", "mp3")
"""Demuxers whose length may be an estimate from the bitrate (an MP3 without a Xing/Info/VBRI header):
a shortfall there proves nothing, so it is not called truncation."""
_GAP_S = 0.1
"""A frame starting this much later than the previous one ended leaves a hole (damaged data skipped, a
paused recording): it is filled with silence so later words keep their times."""
_REPORTED_HOLE_S = 0.5
"""Holes this long are worth telling the user about."""


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
    stream_index: int = 0
    """Which of the file's audio streams (0-based among audio streams) is transcribed."""
    audio_streams: int = 1
    origin_s: float = 0.0
    """The media's start time: time 0 in a player (MPEG-TS starts at a running clock's timestamp)."""
    length_exact: bool = True
    """Whether the declared length is written in the file (not estimated), so a shortfall means damage."""


@dataclass(frozen=True)
class AudioChunk:
    """A piece of speech for one backend call; ``offset_ms`` is where it starts on the media's timeline."""

    offset_ms: int
    samples: FloatArray
    sample_rate: int = SAMPLE_RATE

    @property
    def duration_ms(self) -> int:
        return round(len(self.samples) * 1000 / self.sample_rate)


class AudioInput(Protocol):
    """What a transcription backend consumes: audio on the media's timeline, delivered in pieces."""

    @property
    def start_ms(self) -> int: ...

    @property
    def expected_end_ms(self) -> int:
        """Where the audio should end (for progress); the real end is known once consumed."""
        ...

    def chunks(self, max_chunk_s: float, search_s: float) -> Iterator[AudioChunk]:
        """Consecutive pieces of at most ``max_chunk_s`` seconds, cut at quiet moments."""
        ...


@dataclass(frozen=True)
class AudioClip:
    """Decoded speech held in memory; times are milliseconds on the media's own timeline."""

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

    @property
    def expected_end_ms(self) -> int:
        return self.end_ms

    def chunks(self, max_chunk_s: float, search_s: float) -> Iterator[AudioChunk]:
        for begin, piece in rechunk([self.samples], self.sample_rate, max_chunk_s, search_s):
            yield AudioChunk(self.start_ms + round(begin * 1000 / self.sample_rate), piece, self.sample_rate)


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


def _info(container: av.container.InputContainer, path: Path | None = None) -> MediaInfo:
    if not container.streams:
        # An MP4 whose index (moov) was never written or got cut off opens with no streams at all.
        raise UnreadableMediaError("the file is damaged or incomplete: it holds no readable audio or video streams")
    if not container.streams.audio:
        raise NoAudioStreamError("the file has no audio stream, so there is no speech to transcribe")
    index = choose_audio_stream(container)
    stream = container.streams.audio[index]
    audio_s = _seconds(stream.duration, stream.time_base)
    if path is not None and (container.format.name or "") == "wav":
        audio_s = _wav_declared_s(path, stream) or audio_s
    container_s = container.duration / av.time_base if container.duration is not None else None
    start_s = container.start_time / av.time_base if container.start_time else 0.0
    origin_s = start_s if _RUNNING_CLOCK_FORMATS.intersection((container.format.name or "").split(",")) else 0.0
    # FFmpeg's durations are spans from a start; the player's timeline runs from origin to start + span.
    if container_s is not None:
        container_s += max(0.0, start_s - origin_s)
    if audio_s is not None:
        audio_s += max(0.0, (_seconds(stream.start_time, stream.time_base) or 0.0) - origin_s)
    duration_s = container_s if container_s is not None else audio_s
    codec = stream.codec_context
    return MediaInfo(
        duration_ms=round(duration_s * 1000) if duration_s is not None else None,
        audio_duration_ms=round(audio_s * 1000) if audio_s is not None else None,
        sample_rate=int(codec.sample_rate or 0),
        channels=int(codec.channels or 0),
        codec=str(codec.name),
        stream_index=index,
        audio_streams=len(container.streams.audio),
        origin_s=max(0.0, origin_s),
        length_exact=_length_is_exact(container, path),
    )


def _length_is_exact(container: av.container.InputContainer, path: Path | None) -> bool:
    names = (container.format.name or "").split(",")
    if not any(name in _ESTIMATED_LENGTH_FORMATS for name in names):
        return True
    if "mp3" in names and path is not None:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
            if head[:3] == b"ID3" and len(head) >= 10:  # skip the tag: its syncsafe size is in bytes 6..9
                handle.seek(10 + ((head[6] << 21) | (head[7] << 14) | (head[8] << 7) | head[9]))
                head = handle.read(1 << 12)
        return any(marker in head[:4096] for marker in (b"Xing", b"Info", b"VBRI"))
    return False


def _wav_declared_s(path: Path, stream: av.AudioStream) -> float | None:
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


def probe_media(path: Path) -> MediaInfo:
    """Duration and audio format of ``path``; raises a :class:`MediaError` subclass when unusable."""
    with _open(path) as container:
        return _info(container, path)


class _SampleSink:
    """Places resampled frames at their presentation times: pads gaps before the first frame with
    silence and drops what falls before the requested start or after the requested end."""

    def __init__(self, start_s: float, end_s: float | None) -> None:
        self._start = round(start_s * SAMPLE_RATE)
        self._end = round(end_s * SAMPLE_RATE) if end_s is not None else None
        self._next: int | None = None  # absolute sample index where the next frame goes
        self._pending: list[FloatArray] = []
        self.count = 0

    @property
    def position_s(self) -> float:
        return (self._start + self.count) / SAMPLE_RATE

    @property
    def done(self) -> bool:
        return self._end is not None and self._start + self.count >= self._end

    def skip_to(self, time_s: float) -> None:
        """The next samples belong at ``time_s`` (after a hole); the hole becomes silence."""
        if self._next is not None:
            self._next = max(self._next, round(time_s * SAMPLE_RATE))

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
        self._pending.append(np.ascontiguousarray(samples, dtype=np.float32))
        self.count += len(samples)

    def drain(self) -> Iterator[FloatArray]:
        """The samples added since the last drain, in order."""
        pending, self._pending = self._pending, []
        yield from pending


class AudioSource:
    """The audio of a media file (or of ``[start_ms, end_ms)``), decoded lazily as it is consumed.

    Opening probes the file, so a missing, unreadable or silent-only file fails here, before any work;
    damage further in surfaces while iterating. One audio stream is decoded (see
    :mod:`agent_app.media.stream_choice`); video packets are read past (their times tell a cut file from
    one whose audio simply ends early) but never decoded, and only the current piece of audio is held in
    memory. A packet that fails to decode is skipped and its time recorded in :attr:`damaged_at_ms`.
    """

    def __init__(self, path: Path, start_ms: int | None = None, end_ms: int | None = None) -> None:
        self.path = path
        with _open(path) as container:
            self.info = _info(container, path)
        self._start_s = max(0, start_ms or 0) / 1000
        self._end_s = end_ms / 1000 if end_ms is not None else None
        self._expected_end_s = _expected_end_s(self.info, self._end_s)
        self.decoded_ms = 0
        """How much audio the last iteration delivered."""
        self.damaged_at_ms: list[int] = []
        """Media times where the last iteration met packets it could not decode (skipped)."""
        self.holes_ms: list[tuple[int, int]] = []
        """``(start, end)`` stretches of at least half a second the stream had no audio for (filled with silence)."""

    @property
    def start_ms(self) -> int:
        return round(self._start_s * 1000)

    @property
    def media_duration_ms(self) -> int | None:
        return self.info.duration_ms

    @property
    def expected_end_ms(self) -> int:
        end_s = self._expected_end_s if self._expected_end_s is not None else self._start_s
        return max(self.start_ms, round(end_s * 1000))

    def blocks(self, on_progress: Callable[[float], None] | None = None) -> Iterator[FloatArray]:
        """16 kHz mono float32 blocks in order, aligned to the media's timeline (gaps before the first
        frame and holes between frames padded with silence). Raises a :class:`MediaError` when the file
        turns out cut short or unreadable; single undecodable packets are skipped and recorded."""
        origin = self.info.origin_s
        self.damaged_at_ms = []
        self.holes_ms = []
        with _open(self.path) as container:
            stream = container.streams.audio[self.info.stream_index]
            stream.codec_context.thread_type = "AUTO"
            if self._start_s > 0 and stream.time_base is not None:
                # Seek to the keyframe before the start; the sink trims the samples before it.
                container.seek(int((self._start_s + origin) / stream.time_base), stream=stream, backward=True)
            sink = _SampleSink(self._start_s, self._end_s)
            layout = "mono" if (stream.codec_context.channels or 1) == 1 else "stereo"
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=SAMPLE_RATE)
            span_s = max((self._expected_end_s or self._start_s) - self._start_s, 1e-3)
            packets = container.demux(*container.streams)
            last_packet_end_s = 0.0
            expected_s: float | None = None
            while not sink.done:
                try:
                    packet = next(packets)
                except StopIteration:
                    break
                except av.error.FFmpegError as exc:
                    raise UnreadableMediaError(
                        f"the file could not be read after {sink.position_s:.1f} s ({_reason(exc)}); "
                        "it is probably damaged or cut short"
                    ) from exc
                last_packet_end_s = max(last_packet_end_s, _packet_end_s(packet, origin))
                if packet.stream.index != stream.index:
                    continue  # video, subtitles, other audio: only their times matter
                try:
                    frames = stream.decode(packet)
                except av.error.FFmpegError:
                    self.damaged_at_ms.append(round(sink.position_s * 1000))
                    continue
                for frame in frames:
                    expected_s = self._place(frame, expected_s, sink, resampler)
                yield from sink.drain()
                if on_progress is not None and self._expected_end_s:
                    on_progress(min(1.0, max(0.0, (sink.position_s - self._start_s) / span_s)))
            else:
                last_packet_end_s = float("inf")  # stopped at the requested end: nothing can be missing
            for out in resampler.resample(None):
                sink.add(_mono(out), None)
            yield from sink.drain()
        self.decoded_ms = round(sink.count * 1000 / SAMPLE_RATE)
        if self.damaged_at_ms and sink.count == 0:
            raise UnreadableMediaError("the audio could not be decoded at all; the file is probably damaged")
        _check_complete(self.info, self._start_s, self._expected_end_s, sink.count, last_packet_end_s)

    def _place(
        self, frame: av.AudioFrame, expected_s: float | None, sink: _SampleSink, resampler: av.AudioResampler
    ) -> float | None:
        """Resample ``frame`` into ``sink`` at its time, after silence for any hole since the previous
        frame ended (``expected_s``); returns where this frame ends."""
        time_s = _seconds(frame.pts, frame.time_base)
        time_s = time_s - self.info.origin_s if time_s is not None else None
        if time_s is not None and expected_s is not None and time_s - expected_s > _GAP_S:
            sink.skip_to(time_s)
            if time_s - expected_s >= _REPORTED_HOLE_S:
                self.holes_ms.append((round(expected_s * 1000), round(time_s * 1000)))
        for out in resampler.resample(frame):
            sink.add(_mono(out), time_s)
            time_s = None
        start_s = _seconds(frame.pts, frame.time_base)
        if start_s is None:
            return expected_s
        return start_s - self.info.origin_s + frame.samples / (frame.sample_rate or SAMPLE_RATE)

    def chunks(self, max_chunk_s: float, search_s: float) -> Iterator[AudioChunk]:
        for begin, piece in rechunk(self.blocks(), SAMPLE_RATE, max_chunk_s, search_s):
            yield AudioChunk(self.start_ms + round(begin * 1000 / SAMPLE_RATE), piece)

    def collect(self, on_progress: Callable[[float], None] | None = None) -> AudioClip:
        """All of it in memory (for short media, tests and benchmarks)."""
        blocks = list(self.blocks(on_progress))
        samples = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
        media_ms = self.media_duration_ms
        if media_ms is None:
            media_ms = self.start_ms + round(len(samples) * 1000 / SAMPLE_RATE)
        return AudioClip(samples=samples, sample_rate=SAMPLE_RATE, start_ms=self.start_ms, media_duration_ms=media_ms)


def extract_audio(
    path: Path,
    start_ms: int | None = None,
    end_ms: int | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> AudioClip:
    """The audio of ``path`` (optionally only ``[start_ms, end_ms)``) as 16 kHz mono float32, in memory.

    Raises :class:`UnreadableMediaError`, :class:`NoAudioStreamError` or :class:`TruncatedMediaError`.
    """
    return AudioSource(path, start_ms, end_ms).collect(on_progress)


def _mono(frame: av.AudioFrame) -> FloatArray:
    """A resampled (planar float, mono or stereo) frame as one mono float32 array."""
    return downmix(np.asarray(frame.to_ndarray(), dtype=np.float32))


def _packet_end_s(packet: av.Packet[Any], origin_s: float) -> float:
    """Where a packet's content ends on the media's timeline (0 when it carries no time)."""
    stamp = packet.pts if packet.pts is not None else packet.dts
    if stamp is None or packet.time_base is None:
        return 0.0
    return float((stamp + (packet.duration or 0)) * packet.time_base) - origin_s


def _expected_end_s(info: MediaInfo, end_s: float | None) -> float | None:
    declared_ms = info.audio_duration_ms if info.audio_duration_ms is not None else info.duration_ms
    declared_s = declared_ms / 1000 if declared_ms is not None else None
    if end_s is None:
        return declared_s
    return min(end_s, declared_s) if declared_s is not None else end_s


def _check_complete(
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
    if expected_end_s - got_end_s > max(_TRUNCATION_TOLERANCE_S, 0.01 * (expected_end_s - start_s)):
        raise TruncatedMediaError(
            f"the file is incomplete: its audio stops at {got_end_s:.1f} s but should last until "
            f"{expected_end_s:.1f} s (an interrupted upload or copy?)"
        )
