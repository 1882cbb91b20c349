"""Tiny media files made at test time with PyAV (never committed): a video with sound, a sound file,
and things that only pretend to be media."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def make_video(path: Path, *, seconds: float = 1.0, fps: int = 10, with_audio: bool = True) -> Path:
    """An H.264 MP4 of a moving grey ramp and, optionally, a 440 Hz AAC tone."""
    with av.open(str(path), mode="w") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("aac", rate=16_000, layout="mono") if with_audio else None
        frames = int(seconds * fps)
        for index in range(frames):
            image = np.full((48, 64, 3), (index * 20) % 255, dtype=np.uint8)
            for packet in video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in video.encode():
            container.mux(packet)
        if audio is not None:
            _write_tone(container, audio, seconds, 16_000)
    return path


def make_wav(path: Path, *, seconds: float = 1.0, rate: int = 16_000) -> Path:
    """A mono 16-bit PCM WAV of a 440 Hz tone."""
    with av.open(str(path), mode="w", format="wav") as container:
        stream = container.add_stream("pcm_s16le", rate=rate, layout="mono")
        _write_tone(container, stream, seconds, rate)
    return path


def _write_tone(
    container: av.container.OutputContainer, stream: av.audio.stream.AudioStream, seconds: float, rate: int
) -> None:
    samples = int(seconds * rate)
    tone = (np.sin(2 * np.pi * 440 * np.arange(samples) / rate) * 0.3).astype(np.float32)
    frame_size = stream.codec_context.frame_size or 1024
    encoder_format = stream.codec_context.format.name
    for start in range(0, samples, frame_size):
        chunk = tone[start : start + frame_size]
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = rate
        frame.pts = start
        frame.time_base = Fraction(1, rate)
        if encoder_format != "flt":
            resampled = av.AudioResampler(format=encoder_format, layout="mono", rate=rate).resample(frame)
        else:
            resampled = [frame]
        for out in resampled:
            for packet in stream.encode(out):
                container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)


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
