"""Placing decoded audio on the media's timeline, so "second N of the transcript" is "second N in the player".

FFmpeg's MP4 demuxer applies the edit list and drops the AAC encoder delay (priming samples), so the
first decoded frame of a normal file starts at 0; when audio starts later than the media (an offset
edit list, a delayed track) we pad with silence, and samples before 0 are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

import av
import numpy as np

from agent_app.media.chunking import FloatArray
from agent_app.media.downmix import downmix

SAMPLE_RATE = 16_000
"""What every transcriber here consumes: 16 kHz mono float32 in [-1, 1]."""


class SampleSink:
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


def mono(frame: av.AudioFrame) -> FloatArray:
    """A resampled (planar float, mono or stereo) frame as one mono float32 array."""
    return downmix(np.asarray(frame.to_ndarray(), dtype=np.float32))
