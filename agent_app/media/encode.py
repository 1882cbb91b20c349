"""Compress extracted speech for upload: Opus in an Ogg container, with PyAV.

Why Opus: at 24 kbit/s mono it keeps speech intelligible for recognizers while an hour is about 11 MB
(raw 16 kHz float would be 230 MB), far under OpenAI's 25 MB per-request limit for our chunk sizes, and
both OpenAI (``ogg``) and Gemini (``audio/ogg``) accept it.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np

from agent_app.media.audio import AudioInput
from agent_app.media.chunking import FloatArray

OGG_MIME_TYPE = "audio/ogg"
OPUS_BITRATE = 24_000
_FRAME = 960  # 60 ms at 16 kHz: a frame size libopus accepts


def encode_ogg_opus(samples: FloatArray, sample_rate: int) -> bytes:
    """``samples`` (mono float32) as an Ogg/Opus file in memory."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=sample_rate)
        if not isinstance(stream, av.AudioStream):
            raise TypeError("PyAV made a libopus stream that is not audio")
        stream.layout = "mono"
        stream.bit_rate = OPUS_BITRATE
        stream.codec_context.options = {"application": "voip"}
        for offset in range(0, len(samples), _FRAME):
            chunk = np.ascontiguousarray(samples[offset : offset + _FRAME], dtype=np.float32)
            frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout="mono")
            frame.sample_rate = sample_rate
            frame.pts = offset
            frame.time_base = Fraction(1, sample_rate)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


@dataclass(frozen=True)
class EncodedChunk:
    """One upload: where it starts on the media's timeline, how long it is, and its Ogg/Opus bytes."""

    offset_ms: int
    duration_ms: int
    data: bytes


def encoded_chunks(audio: AudioInput, max_chunk_s: float, search_s: float = 20.0) -> Iterator[EncodedChunk]:
    """``audio`` cut at quiet moments into pieces of at most ``max_chunk_s`` seconds, each compressed.

    Decoded and encoded lazily, so only one piece is in memory at a time."""
    for chunk in audio.chunks(max_chunk_s, search_s):
        if len(chunk.samples) < chunk.sample_rate // 10:  # under 100 ms: nothing to hear, some APIs reject it
            continue
        yield EncodedChunk(
            offset_ms=chunk.offset_ms,
            duration_ms=chunk.duration_ms,
            data=encode_ogg_opus(chunk.samples, chunk.sample_rate),
        )
