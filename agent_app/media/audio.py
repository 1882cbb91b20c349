"""Audio extraction with PyAV: any file FFmpeg reads → 16 kHz mono float32 samples, streamed.

Why PyAV: its wheel ships FFmpeg's libraries, so no system ``ffmpeg`` is needed. Why streaming: a video can
be gigabytes, so only the audio stream is demuxed, packet by packet, and handed on piece by piece: an hour
costs no more memory than a minute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import av
import av.error

from agent_app.media.audio_probe import ffmpeg_reason, media_info, open_media, seconds
from agent_app.media.chunking import FloatArray, rechunk
from agent_app.media.media_errors import UnreadableMediaError
from agent_app.media.sample_placement import SAMPLE_RATE, SampleSink, mono
from agent_app.media.truncation import check_complete, expected_end_s, packet_end_s

_GAP_S = 0.1
"""A frame starting this much later than the previous one ended leaves a hole (damaged data skipped, a
paused recording): it is filled with silence so later words keep their times."""
_REPORTED_HOLE_S = 0.5
"""Holes this long are worth telling the user about."""


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


class AudioSource:
    """The audio of a media file (or of ``[start_ms, end_ms)``), decoded lazily as it is consumed.

    Opening probes the file, so a missing or unreadable file fails before any work; damage further in
    surfaces while iterating. Video packets are read past, never decoded: their times tell a cut file from
    one whose audio simply ends early."""

    def __init__(self, path: Path, start_ms: int | None = None, end_ms: int | None = None) -> None:
        self.path = path
        with open_media(path) as container:
            self.info = media_info(container, path)
        self._start_s = max(0, start_ms or 0) / 1000
        self._end_s = end_ms / 1000 if end_ms is not None else None
        self._expected_end_s = expected_end_s(self.info, self._end_s)
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
        with open_media(self.path) as container:
            stream = container.streams.audio[self.info.stream_index]
            stream.codec_context.thread_type = "AUTO"
            if self._start_s > 0 and stream.time_base is not None:
                # Seek to the keyframe before the start; the sink trims the samples before it.
                container.seek(int((self._start_s + origin) / stream.time_base), stream=stream, backward=True)
            sink = SampleSink(self._start_s, self._end_s)
            layout = "mono" if (stream.codec_context.channels or 1) == 1 else "stereo"
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=SAMPLE_RATE)
            span_s = max((self._expected_end_s or self._start_s) - self._start_s, 1e-3)
            packets = container.demux(*container.streams)
            last_packet_end_s = 0.0
            expected_s: float | None = None
            while not sink.done:
                packet = _next_packet(packets, sink)
                if packet is None:
                    break
                last_packet_end_s = max(last_packet_end_s, packet_end_s(packet, origin))
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
                sink.add(mono(out), None)
            yield from sink.drain()
        self.decoded_ms = round(sink.count * 1000 / SAMPLE_RATE)
        if self.damaged_at_ms and sink.count == 0:
            raise UnreadableMediaError("the audio could not be decoded at all; the file is probably damaged")
        check_complete(self.info, self._start_s, self._expected_end_s, sink.count, last_packet_end_s)

    def _place(
        self, frame: av.AudioFrame, expected_s: float | None, sink: SampleSink, resampler: av.AudioResampler
    ) -> float | None:
        """Resample ``frame`` into ``sink`` at its time, after silence for any hole since the previous
        frame ended (``expected_s``); returns where this frame ends."""
        time_s = seconds(frame.pts, frame.time_base)
        time_s = time_s - self.info.origin_s if time_s is not None else None
        if time_s is not None and expected_s is not None and time_s - expected_s > _GAP_S:
            sink.skip_to(time_s)
            if time_s - expected_s >= _REPORTED_HOLE_S:
                self.holes_ms.append((round(expected_s * 1000), round(time_s * 1000)))
        for out in resampler.resample(frame):
            sink.add(mono(out), time_s)
            time_s = None
        start_s = seconds(frame.pts, frame.time_base)
        if start_s is None:
            return expected_s
        return start_s - self.info.origin_s + frame.samples / (frame.sample_rate or SAMPLE_RATE)

    def chunks(self, max_chunk_s: float, search_s: float) -> Iterator[AudioChunk]:
        for begin, piece in rechunk(self.blocks(), SAMPLE_RATE, max_chunk_s, search_s):
            yield AudioChunk(self.start_ms + round(begin * 1000 / SAMPLE_RATE), piece)


def _next_packet(
    packets: Iterator[av.Packet[av.stream.Stream]], sink: SampleSink
) -> av.Packet[av.stream.Stream] | None:
    """The next packet, ``None`` at the end; a read error is the file's, said with where it happened."""
    try:
        return next(packets)
    except StopIteration:
        return None
    except av.error.FFmpegError as exc:
        raise UnreadableMediaError(
            f"the file could not be read after {sink.position_s:.1f} s ({ffmpeg_reason(exc)}); "
            "it is probably damaged or cut short"
        ) from exc
