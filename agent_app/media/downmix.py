"""Channels to mono without losing the speech: what a plain average gets wrong on real recordings.

Averaging left and right is right for ordinary stereo, and FFmpeg's own downmix handles 5.1 (centre
channel first), so we let the resampler make stereo and decide here. Two stereo files defeat the
average: a phase-inverted pair (a miswired microphone, a "wide" effect) averages to silence, and a
lavalier recorded on one channel only comes out 6 dB quieter (harmless: the local backend normalizes
gain). When the average keeps less than a tenth of the loudest channel's power, the channels are
cancelling each other and we take the loudest channel alone.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agent_app.media.chunking import FloatArray

CANCELLATION_RATIO = 0.1
"""Mixed power below this share of the loudest channel's means the channels cancel (one channel
alone leaves 0.25, uncorrelated channels 0.5, identical ones 1.0)."""
_SILENT_POWER = 1e-10


def downmix(channels: npt.NDArray[np.float32]) -> FloatArray:
    """``(n_channels, n_samples)`` float samples as one mono float32 array."""
    planes = np.atleast_2d(np.asarray(channels, dtype=np.float32))
    if planes.shape[0] == 1:
        return np.ascontiguousarray(planes[0])
    mixed: FloatArray = planes.mean(axis=0, dtype=np.float32)
    power = np.mean(np.square(planes, dtype=np.float32), axis=1)
    loudest = int(np.argmax(power))
    if power[loudest] > _SILENT_POWER and float(np.mean(np.square(mixed))) < CANCELLATION_RATIO * power[loudest]:
        return np.ascontiguousarray(planes[loudest])
    return mixed
