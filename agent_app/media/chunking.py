"""Cut audio into pieces at its quietest moments, so no word is split between two pieces.

Both kinds of backend need it: the local model gets bounded work per call (progress, memory), the remote
APIs have upload size limits. It works on a stream of blocks, so a long file is never held whole in memory:
at most one piece plus one decoded block is buffered.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

_WINDOW_S = 0.05
"""Energy is compared over 50 ms windows: shorter than a syllable, longer than a pitch period."""
_SILENCE_ENERGY = 1e-8
"""Mean square below which a window counts as silent whatever the minimum (digital silence, hiss)."""


def _cut_point(buffer: FloatArray, sample_rate: int, max_len: int, search: int) -> int:
    """Where to end the first piece of ``buffer`` (longer than ``max_len``): the latest of the quietest
    50 ms windows in the last ``search`` samples before ``max_len``."""
    window = max(1, int(_WINDOW_S * sample_rate))
    lo = max_len - search
    region = buffer[lo:max_len]
    usable = (len(region) // window) * window
    if usable == 0:
        return max_len
    energy = np.square(region[:usable], dtype=np.float32).reshape(-1, window).sum(axis=1)
    quiet = np.flatnonzero(energy <= energy.min() * 1.05 + _SILENCE_ENERGY * window)
    return lo + int(quiet[-1]) * window + window // 2


def rechunk(
    blocks: Iterable[FloatArray], sample_rate: int, max_chunk_s: float, search_s: float
) -> Iterator[tuple[int, FloatArray]]:
    """``(first_sample, samples)`` pieces of the concatenated ``blocks``, each at most ``max_chunk_s`` long,
    cut in the quietest place among the last ``search_s`` seconds (at most half) of the piece. Among equally
    quiet windows the latest wins, so long silences do not produce tiny pieces. Always yields at least one
    (possibly empty) piece."""
    max_len = max(2, int(max_chunk_s * sample_rate))
    search = min(max_len // 2, int(search_s * sample_rate))
    parts: list[FloatArray] = []
    buffered = 0
    position = 0
    for block in blocks:
        if len(block) == 0:
            continue
        parts.append(block)
        buffered += len(block)
        while buffered > max_len:
            buffer = np.concatenate(parts) if len(parts) > 1 else parts[0]
            cut = _cut_point(buffer, sample_rate, max_len, search)
            yield position, buffer[:cut]
            position += cut
            parts = [buffer[cut:]]
            buffered = len(parts[0])
    if buffered or position == 0:
        yield position, (np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32))
