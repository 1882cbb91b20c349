"""Cut long audio into pieces at its quietest moments, so no word is split between two pieces.

Both kinds of backend need it: the local model gets bounded work per call (progress, memory), the remote
APIs have upload size limits.
"""

from __future__ import annotations

import numpy as np

from agent_app.media.audio import FloatArray

_WINDOW_S = 0.05
"""Energy is compared over 50 ms windows: shorter than a syllable, longer than a pitch period."""
_SILENCE_ENERGY = 1e-8
"""Mean square below which a window counts as silent whatever the minimum (digital silence, hiss)."""


def split_points(samples: FloatArray, sample_rate: int, max_chunk_s: float, search_s: float) -> list[tuple[int, int]]:
    """``[(begin, end), ...]`` sample ranges covering ``samples``, each at most ``max_chunk_s`` long.

    Each cut is placed at the quietest window among the last ``search_s`` seconds (at most half) of the
    chunk; among equally quiet windows the latest wins, so long silences do not produce tiny chunks.
    """
    total = len(samples)
    max_len = max(1, int(max_chunk_s * sample_rate))
    search = min(max_len // 2, int(search_s * sample_rate))
    window = max(1, int(_WINDOW_S * sample_rate))
    ranges: list[tuple[int, int]] = []
    begin = 0
    while total - begin > max_len:
        lo, hi = begin + max_len - search, begin + max_len
        region = samples[lo:hi]
        usable = (len(region) // window) * window
        if usable == 0:
            cut = hi
        else:
            energy = np.square(region[:usable], dtype=np.float32).reshape(-1, window).sum(axis=1)
            quiet = np.flatnonzero(energy <= energy.min() * 1.05 + _SILENCE_ENERGY * window)
            cut = lo + int(quiet[-1]) * window + window // 2
        ranges.append((begin, cut))
        begin = cut
    if begin < total or not ranges:
        ranges.append((begin, total))
    return ranges
