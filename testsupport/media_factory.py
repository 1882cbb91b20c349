"""Media made at run time, for the tests and the benches: speech synthesized by Debian's ``espeak-ng``,
muxed by PyAV into the containers users upload (MP4 with H.264 or MPEG-4 video and AAC audio), plus the
broken files a tool must survive (no audio stream, truncated, not media at all). Nothing here is committed as a binary.
"""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
import wave
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

import av
import jiwer
import numpy as np
import numpy.typing as npt

SENTENCES = (
    "The quick brown fox runs across the green field.",
    "Please remember to bring the blue book to the meeting tomorrow.",
    "Our new camera makes every picture look sharp and bright.",
)
"""Known speech for word-error-rate checks: plain words espeak pronounces clearly."""

AUDIO_RATE = 44_100
_LEAD_MS, _GAP_MS = 500, 700
"""Silence before (and after) the speech, and between sentences."""
FloatArray = npt.NDArray[np.float32]


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak(text: str, *, words_per_minute: int = 150, voice: str = "en-us") -> tuple[FloatArray, int]:
    """``text`` spoken by espeak-ng as mono float32 samples and their sample rate."""
    result = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "--stdout", text],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with wave.open(io.BytesIO(result.stdout)) as wav:
        rate = wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    pcm = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    return pcm, rate


def resample_linear(samples: FloatArray, rate: int, new_rate: int) -> FloatArray:
    """Simple linear resampling: good enough to feed test speech to an AAC encoder."""
    if rate == new_rate:
        return samples
    count = round(len(samples) * new_rate / rate)
    positions = np.arange(count, dtype=np.float64) * rate / new_rate
    return np.interp(positions, np.arange(len(samples)), samples).astype(np.float32)


def speech_track(
    sentences: tuple[str, ...] | list[str] = SENTENCES, *, rate: int = AUDIO_RATE
) -> tuple[FloatArray, list[tuple[int, int, str]]]:
    """Sentences separated by silence, at ``rate``; returns the samples and each sentence's
    ``(start_ms, end_ms, text)`` so tests know where the words are."""
    parts: list[FloatArray] = [np.zeros(rate * _LEAD_MS // 1000, dtype=np.float32)]
    spans: list[tuple[int, int, str]] = []
    position = len(parts[0])
    for index, sentence in enumerate(sentences):
        pcm, pcm_rate = speak(sentence)
        pcm = resample_linear(pcm, pcm_rate, rate)
        spans.append((position * 1000 // rate, (position + len(pcm)) * 1000 // rate, sentence))
        parts.append(pcm)
        position += len(pcm)
        pause = _LEAD_MS if index == len(sentences) - 1 else _GAP_MS
        parts.append(np.zeros(rate * pause // 1000, dtype=np.float32))
        position += len(parts[-1])
    return np.concatenate(parts), spans


def tone_track(duration_ms: int, tone_at_ms: int, tone_ms: int = 400, rate: int = AUDIO_RATE) -> FloatArray:
    """Silence with one 1 kHz tone burst starting at ``tone_at_ms``: a timing reference."""
    samples = np.zeros(rate * duration_ms // 1000, dtype=np.float32)
    start = rate * tone_at_ms // 1000
    count = rate * tone_ms // 1000
    t = np.arange(count, dtype=np.float32) / rate
    samples[start : start + count] = 0.5 * np.sin(2 * np.pi * 1000 * t)
    return samples


_VFR_STEPS_MS = (33, 33, 40, 66, 33, 100, 250, 33, 50)
"""Frame intervals of a phone camera in changing light: variable frame rate."""


@dataclass(frozen=True)
class Video:
    """A small video track of changing grey: ``codec`` at ``fps``; with ``vfr`` (and ``fps`` 1000, a
    millisecond clock) at irregular intervals."""

    codec: str = "libx264"
    fps: int = 10
    size: tuple[int, int] = (160, 120)
    vfr: bool = False

    def add_to(self, container: av.container.OutputContainer) -> av.VideoStream:
        stream = container.add_stream(self.codec, rate=self.fps)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height = self.size
        stream.pix_fmt = "yuv420p"
        return stream

    def write(self, container: av.container.OutputContainer, stream: av.VideoStream, duration_ms: int) -> None:
        width, height = self.size
        times = list(range(max(1, duration_ms * self.fps // 1000)))
        if self.vfr:
            steps = np.resize(np.array(_VFR_STEPS_MS), duration_ms // 33 + 1)
            times = [int(t) for t in np.concatenate([[0], np.cumsum(steps)]) if t < duration_ms]
        for index, pts in enumerate(times):
            image = np.full((height, width, 3), (index * 7) % 255, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = pts
            frame.time_base = Fraction(1, self.fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


@dataclass(frozen=True, eq=False)
class MediaFile:
    """A media file whose audio is ``channels`` (shape ``(n_channels, n_samples)`` or one channel's samples,
    float in [-1, 1]; ``None``: no audio stream) encoded with ``codec`` at ``rate``, optionally after a
    ``video`` track of the same length (or ``duration_ms``) and with further audio streams (``extra_audio``,
    same layout). Whatever sample format the encoder wants is produced by PyAV's resampler, so any PCM or
    compressed codec of FFmpeg's build works. ``audio_start_ms`` starts the audio after the video;
    ``hole=(at_ms, length_ms)`` leaves the audio timeline empty for ``length_ms`` after ``at_ms`` (a paused
    recorder)."""

    channels: FloatArray | None
    rate: int = AUDIO_RATE
    codec: str = "aac"
    container_format: str | None = None
    layout: str | None = None
    video: Video | None = None
    duration_ms: int | None = None
    audio_start_ms: int = 0
    extra_audio: tuple[FloatArray, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    hole: tuple[int, int] | None = None

    def write(self, path: Path) -> Path:
        tracks = [
            np.atleast_2d(np.asarray(t, dtype=np.float32)) for t in (self.channels, *self.extra_audio) if t is not None
        ]
        duration_ms = self.duration_ms
        if duration_ms is None:
            if not tracks:
                raise ValueError("duration_ms is required without audio")
            duration_ms = tracks[0].shape[1] * 1000 // self.rate + self.audio_start_ms
        layout = (self.layout or {1: "mono", 2: "stereo", 6: "5.1"}[tracks[0].shape[0]]) if tracks else "mono"
        with av.open(str(path), mode="w", format=self.container_format, options=self.options) as container:
            video = (self.video, self.video.add_to(container)) if self.video is not None else None
            streams = []
            for _ in tracks:
                added = container.add_stream(self.codec, rate=self.rate)
                assert isinstance(added, av.AudioStream)
                added.layout = layout
                streams.append(added)
            if video is not None:
                video[0].write(container, video[1], duration_ms)
            for stream, data in zip(streams, tracks, strict=True):
                self._write_audio(container, stream, data)
        return path

    def _write_audio(
        self, container: av.container.OutputContainer, stream: av.AudioStream, channels: FloatArray
    ) -> None:
        rate, layout = self.rate, stream.layout.name
        start = rate * self.audio_start_ms // 1000
        hole = (rate * self.hole[0] // 1000, rate * self.hole[1] // 1000) if self.hole else None
        size = stream.codec_context.frame_size or 1024
        resampler = av.AudioResampler(format=stream.codec_context.format.name, layout=layout, rate=rate)
        for offset in range(0, channels.shape[1], size):
            chunk = np.ascontiguousarray(channels[:, offset : offset + size], dtype=np.float32)
            frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout=layout)
            frame.sample_rate = rate
            frame.pts = start + offset + (hole[1] if hole and offset >= hole[0] else 0)
            frame.time_base = Fraction(1, rate)
            for out in resampler.resample(frame):
                for packet in stream.encode(out):
                    container.mux(packet)
        for out in resampler.resample(None):
            for packet in stream.encode(out):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def mp4(audio: FloatArray | None) -> MediaFile:
    """An MP4 with a small H.264 video track and, when ``audio`` is given, an AAC track (change it with
    :func:`dataclasses.replace`)."""
    return MediaFile(audio, container_format="mp4", video=Video())


def write_mp4(path: Path, audio: FloatArray | None) -> Path:
    return mp4(audio).write(path)


def speech_mp4(
    path: Path, sentences: tuple[str, ...] | list[str] = SENTENCES, *, faststart: bool = False
) -> list[tuple[int, int, str]]:
    """An MP4 of the sentences spoken; returns where each sentence is (ms)."""
    audio, spans = speech_track(sentences)
    replace(mp4(audio), options={"movflags": "faststart"} if faststart else {}).write(path)
    return spans


def silent_mp4(path: Path, duration_ms: int = 2000) -> Path:
    """A valid MP4 with video only: no audio stream."""
    return replace(mp4(None), duration_ms=duration_ms).write(path)


def truncated_copy(source: Path, target: Path, keep: float = 0.5) -> Path:
    """The first ``keep`` fraction of ``source``'s bytes: what an interrupted upload leaves."""
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


def not_media(path: Path) -> Path:
    """A file with a video extension that is not media at all."""
    path.write_text("This is a shopping list, not a video.\n" * 50, encoding="utf-8")
    return path


_NORMALIZE = jiwer.Compose(
    [
        jiwer.ToLowerCase(),
        jiwer.RemovePunctuation(),  # type: ignore[no-untyped-call]
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
        jiwer.ReduceToListOfListOfWords(),
    ]
)


def tiny_wav(tag: int) -> bytes:
    """0.1 s of 16 kHz mono PCM silence whose last sample is ``tag``: as many distinct real files as a bench
    imports, with nothing to encode."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"\x00\x00" * 1599 + (tag % 32_000).to_bytes(2, "little", signed=True))
    return buffer.getvalue()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER after lower-casing and removing punctuation: what a listener would call the same words."""
    return float(jiwer.wer(reference, hypothesis, reference_transform=_NORMALIZE, hypothesis_transform=_NORMALIZE))


@functools.cache
def spoken(
    sentences: tuple[str, ...],
    rate: int,
    *,
    voice: str = "en-us",
    words_per_minute: int = 150,
) -> tuple[FloatArray, list[tuple[int, int, str]]]:
    """Sentences spoken by espeak-ng at ``rate`` (made once per process, shared by every test), and where
    each sentence's sound really is: ``(onset_ms, offset_ms, text)`` measured on the samples, without the
    silence espeak puts around its words."""
    parts: list[FloatArray] = [np.zeros(rate * _LEAD_MS // 1000, dtype=np.float32)]
    truth: list[tuple[int, int, str]] = []
    position = len(parts[0])
    for index, sentence in enumerate(sentences):
        pcm, pcm_rate = speak(sentence, voice=voice, words_per_minute=words_per_minute)
        pcm = resample(pcm, pcm_rate, rate)
        sound = np.flatnonzero(np.abs(pcm) > 0.01)
        truth.append(((position + sound[0]) * 1000 // rate, (position + sound[-1]) * 1000 // rate, sentence))
        parts.append(pcm)
        position += len(pcm)
        parts.append(np.zeros(rate * (_GAP_MS if index < len(sentences) - 1 else _LEAD_MS) // 1000, dtype=np.float32))
        position += len(parts[-1])
    return np.concatenate(parts), truth


def placed_speech(
    rate: int, placements: list[tuple[int, str]], total_ms: int
) -> tuple[FloatArray, list[tuple[int, int]]]:
    """Silence of ``total_ms`` with each sentence's sound starting exactly at its given millisecond;
    returns the samples and the true ``(onset_ms, offset_ms)`` of each."""
    samples = np.zeros(rate * total_ms // 1000, dtype=np.float32)
    truth = []
    for at_ms, sentence in placements:
        pcm, pcm_rate = speak(sentence)
        pcm = resample(pcm, pcm_rate, rate)
        sound = np.flatnonzero(np.abs(pcm) > 0.01)
        pcm = pcm[sound[0] : sound[-1] + 1]
        start = rate * at_ms // 1000
        samples[start : start + len(pcm)] = pcm
        truth.append((at_ms, at_ms + len(pcm) * 1000 // rate))
    return samples, truth


def resample(samples: FloatArray, rate: int, new_rate: int) -> FloatArray:
    """FFmpeg's band-limited resampling (via PyAV), as a recorder at ``new_rate`` would have captured it:
    linear interpolation would alias highs into an 8 kHz telephone band and make it unfairly hard."""
    if rate == new_rate:
        return samples
    frame = av.AudioFrame.from_ndarray(
        np.ascontiguousarray(samples, dtype=np.float32)[None], format="flt", layout="mono"
    )
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="flt", layout="mono", rate=new_rate)
    out = [*resampler.resample(frame), *resampler.resample(None)]
    return np.concatenate([np.asarray(f.to_ndarray(), dtype=np.float32).reshape(-1) for f in out])
