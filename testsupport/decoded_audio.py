"""Decoded audio held in memory, for the tests and the benches: the app streams it (``AudioSource``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent_app.media.audio import AudioChunk, AudioSource
from agent_app.media.chunking import FloatArray, rechunk
from agent_app.media.sample_placement import SAMPLE_RATE


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


def extract_audio(
    path: Path,
    start_ms: int | None = None,
    end_ms: int | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> AudioClip:
    """The audio of ``path`` (optionally only ``[start_ms, end_ms)``) as 16 kHz mono float32, in memory;
    the media errors of :class:`AudioSource`."""
    source = AudioSource(path, start_ms, end_ms)
    blocks = list(source.blocks(on_progress))
    samples = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
    media_ms = source.media_duration_ms
    if media_ms is None:
        media_ms = source.start_ms + round(len(samples) * 1000 / SAMPLE_RATE)
    return AudioClip(samples=samples, sample_rate=SAMPLE_RATE, start_ms=source.start_ms, media_duration_ms=media_ms)
