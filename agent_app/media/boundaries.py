"""Tighten a segment's times to where its sound is.

Moonshine's voice detector opens about a quarter second before speech and closes a third of a second
after it, so a subtitle would appear early and linger, and "sentence B starts at 7.5 s" comes back as
7.25 s. The audio itself knows better: within the segment, the first and last 10 ms windows that are
loud relative to the segment's own speech mark where the words are. Only ever shrinks a segment, and
the threshold is relative, so background music or noise at most leaves it as the model said.
"""

from __future__ import annotations

import numpy as np

from agent_app.media.chunking import FloatArray

_WINDOW_S = 0.01
_RELATIVE_LEVEL = 0.1
"""A window counts as sound when its RMS reaches a tenth (-20 dB) of the segment's loud windows."""
_LOUD_PERCENTILE = 90.0
_MARGIN_S = 0.04
"""Kept around the sound: consonant onsets and fades are quieter than the threshold."""


def tighten(samples: FloatArray, sample_rate: int, begin: int, end: int) -> tuple[int, int]:
    """``(begin, end)`` sample indices of ``samples`` narrowed to the sound inside them."""
    begin, end = max(0, begin), min(len(samples), end)
    window = max(1, int(_WINDOW_S * sample_rate))
    count = (end - begin) // window
    if count < 3:
        return begin, end
    frames = samples[begin : begin + count * window].reshape(count, window)
    rms = np.sqrt(np.mean(np.square(frames, dtype=np.float32), axis=1))
    loud = float(np.percentile(rms, _LOUD_PERCENTILE))
    if loud <= 0.0:
        return begin, end
    voiced = np.flatnonzero(rms >= _RELATIVE_LEVEL * loud)
    margin = int(_MARGIN_S * sample_rate)
    new_begin = max(begin, begin + int(voiced[0]) * window - margin)
    new_end = min(end, begin + (int(voiced[-1]) + 1) * window + margin)
    return (new_begin, new_end) if new_end > new_begin else (begin, end)
