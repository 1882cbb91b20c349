"""Tiny media files made at test time with PyAV (never committed): a video with sound, a sound file,
and things that only pretend to be media. The muxing itself is :mod:`testsupport.media_factory`'s."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from testsupport.media_factory import FloatArray, MediaFile, Video


def _tone(seconds: float, rate: int) -> FloatArray:
    """A 440 Hz tone at a third of full scale, as one channel ``(1, n)``."""
    samples = int(seconds * rate)
    return (np.sin(2 * np.pi * 440 * np.arange(samples) / rate) * 0.3).astype(np.float32)[None]


def make_video(path: Path, *, seconds: float = 1.0, fps: int = 10) -> Path:
    """An H.264 MP4 (64×48) of a moving grey ramp and a 440 Hz AAC tone."""
    return MediaFile(_tone(seconds, 16_000), 16_000, codec="aac", video=Video("libx264", fps, (64, 48))).write(path)


def make_wav(path: Path, *, seconds: float = 1.0, rate: int = 16_000) -> Path:
    """A mono 16-bit PCM WAV of a 440 Hz tone."""
    return MediaFile(_tone(seconds, rate), rate, codec="pcm_s16le", container_format="wav").write(path)


def make_png(path: Path) -> Path:
    """A real PNG image: FFmpeg can open it, but it is not audio or video."""
    with av.open(str(path), mode="w", format="image2") as container:
        stream = container.add_stream("png", rate=1)
        stream.width, stream.height, stream.pix_fmt = 8, 8, "rgb24"
        frame = av.VideoFrame.from_ndarray(np.zeros((8, 8, 3), dtype=np.uint8), format="rgb24")
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
