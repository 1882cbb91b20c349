"""Which audio stream of a file to transcribe when it has several.

Screen recorders (OBS) write one track per source, often with an empty first track (desktop audio
while only the microphone spoke); films carry one track per language with the default one marked.
Rule: prefer the streams the file marks as default, in file order, then the others; take the first
one that carries sound anywhere. Finding out costs one pass of audio decoding (no video), and it stops
as soon as the preferred stream is heard, so a normal file costs a fraction of a second. A file where
every stream is silent gets its preferred stream (and the transcript says no speech was recognized).
"""

from __future__ import annotations

import av
import av.error
import numpy as np

AUDIBLE_PEAK = 1e-3
"""A stream whose samples never exceed this (-60 dBFS) is silent for our purpose."""


_FULL_SCALE = {"u8": 128.0, "s16": 32768.0, "s32": 2.0**31, "s64": 2.0**63}


def _peak(frame: av.AudioFrame) -> float:
    """The frame's largest magnitude on a [0, 1] scale, whatever its sample format."""
    samples = frame.to_ndarray().astype(np.float64)
    kind = frame.format.name.rstrip("p")
    if kind == "u8":
        samples -= 128.0
    return float(np.max(np.abs(samples), initial=0.0)) / _FULL_SCALE.get(kind, 1.0)


def preference_order(container: av.container.InputContainer) -> list[av.AudioStream]:
    """The audio streams, default-marked ones first, each group in file order."""
    streams = list(container.streams.audio)
    default = [s for s in streams if s.disposition & av.stream.Disposition.default]
    return default + [s for s in streams if s not in default]


def choose_audio_stream(container: av.container.InputContainer) -> int:
    """The index (in ``container.streams.audio``) of the stream to transcribe; see the module doc."""
    ordered = preference_order(container)
    if len(ordered) <= 1:
        return 0
    audible: set[int] = set()
    by_index = {stream.index: stream for stream in ordered}
    preferred = ordered[0].index
    try:
        for packet in container.demux(*ordered):
            if packet.stream.index in audible:
                continue
            try:
                frames = by_index[packet.stream.index].decode(packet)
            except av.error.FFmpegError:
                continue  # a damaged packet says nothing either way
            for frame in frames:
                if _peak(frame) > AUDIBLE_PEAK:
                    audible.add(packet.stream.index)
                    break
            if preferred in audible:
                break
    except av.error.FFmpegError:
        pass  # damage is reported by the extraction itself; choose from what was heard
    chosen = next((s for s in ordered if s.index in audible), ordered[0])
    return list(container.streams.audio).index(chosen)
