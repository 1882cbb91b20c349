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
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import jiwer
import numpy as np
import numpy.typing as npt

from agent_app.media.encode import write_mono_audio

SENTENCES = (
    "The quick brown fox runs across the green field.",
    "Please remember to bring the blue book to the meeting tomorrow.",
    "Our new camera makes every picture look sharp and bright.",
)
"""Known speech for word-error-rate checks: plain words espeak pronounces clearly."""

AUDIO_RATE = 44_100
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
    sentences: tuple[str, ...] | list[str] = SENTENCES,
    *,
    lead_ms: int = 500,
    gap_ms: int = 700,
    tail_ms: int = 500,
    rate: int = AUDIO_RATE,
) -> tuple[FloatArray, list[tuple[int, int, str]]]:
    """Sentences separated by silence, at ``rate``; returns the samples and each sentence's
    ``(start_ms, end_ms, text)`` so tests know where the words are."""
    parts: list[FloatArray] = [np.zeros(rate * lead_ms // 1000, dtype=np.float32)]
    spans: list[tuple[int, int, str]] = []
    position = len(parts[0])
    for index, sentence in enumerate(sentences):
        pcm, pcm_rate = speak(sentence)
        pcm = resample_linear(pcm, pcm_rate, rate)
        spans.append((position * 1000 // rate, (position + len(pcm)) * 1000 // rate, sentence))
        parts.append(pcm)
        position += len(pcm)
        pause = tail_ms if index == len(sentences) - 1 else gap_ms
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


def write_mp4(
    path: Path,
    audio: FloatArray | None,
    *,
    rate: int = AUDIO_RATE,
    duration_ms: int | None = None,
    video_codec: str = "libx264",
    audio_codec: str = "aac",
    fps: int = 10,
    size: tuple[int, int] = (160, 120),
    faststart: bool = False,
    audio_start_ms: int = 0,
) -> Path:
    """An MP4 with a small moving-colour video track and, when ``audio`` is given, an AAC track
    (starting ``audio_start_ms`` after the video when set)."""
    if duration_ms is None:
        if audio is None:
            raise ValueError("duration_ms is required without audio")
        duration_ms = len(audio) * 1000 // rate
    options = {"movflags": "faststart"} if faststart else {}
    with av.open(str(path), mode="w", format="mp4", options=options) as container:
        video = container.add_stream(video_codec, rate=fps)
        assert isinstance(video, av.VideoStream)
        video.width, video.height = size
        video.pix_fmt = "yuv420p"
        audio_stream: av.AudioStream | None = None
        if audio is not None:
            added = container.add_stream(audio_codec, rate=rate)
            assert isinstance(added, av.AudioStream)
            audio_stream = added
            audio_stream.layout = "mono"
        _write_video(container, video, duration_ms, fps, size)
        if audio_stream is not None and audio is not None:
            start = rate * audio_start_ms // 1000
            write_mono_audio(container, audio_stream, audio, rate, sample_format="fltp", start_sample=start)
    return path


_VFR_STEPS_MS = (33, 33, 40, 66, 33, 100, 250, 33, 50)
"""Frame intervals of a phone camera in changing light: variable frame rate."""


def _write_video(
    container: av.container.OutputContainer,
    stream: av.VideoStream,
    duration_ms: int,
    fps: int,
    size: tuple[int, int],
    *,
    vfr: bool = False,
) -> None:
    """Frames at ``fps``; with ``vfr`` (and ``fps`` 1000, a millisecond clock) at irregular intervals."""
    width, height = size
    times = list(range(max(1, duration_ms * fps // 1000)))
    if vfr:
        steps = np.resize(np.array(_VFR_STEPS_MS), duration_ms // 33 + 1)
        times = [int(t) for t in np.concatenate([[0], np.cumsum(steps)]) if t < duration_ms]
    for index, pts in enumerate(times):
        shade = (index * 7) % 255
        image = np.full((height, width, 3), shade, dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24")
        frame.pts = pts
        frame.time_base = Fraction(1, fps)
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)


def speech_mp4(
    path: Path, sentences: tuple[str, ...] | list[str] = SENTENCES, **kwargs: Any
) -> list[tuple[int, int, str]]:
    """An MP4 of the sentences spoken; returns where each sentence is (ms)."""
    audio, spans = speech_track(sentences)
    write_mp4(path, audio, **kwargs)
    return spans


def silent_mp4(path: Path, duration_ms: int = 2000) -> Path:
    """A valid MP4 with video only: no audio stream."""
    return write_mp4(path, None, duration_ms=duration_ms)


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


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER after lower-casing and removing punctuation: what a listener would call the same words."""
    return float(jiwer.wer(reference, hypothesis, reference_transform=_NORMALIZE, hypothesis_transform=_NORMALIZE))


def write_audio_file(
    path: Path,
    channels: FloatArray,
    rate: int,
    *,
    codec: str,
    container_format: str | None = None,
    layout: str | None = None,
    video: tuple[str, int] | None = None,
    duration_ms: int | None = None,
    audio_start_ms: int = 0,
    extra_audio: list[FloatArray] | None = None,
    options: dict[str, str] | None = None,
    hole: tuple[int, int] | None = None,
    vfr: bool = False,
    size: tuple[int, int] = (160, 120),
) -> Path:
    """A media file whose audio is ``channels`` (shape ``(n_channels, n_samples)``, float in [-1, 1]) encoded
    with ``codec`` at ``rate``, optionally after a small video track ``(codec, fps)`` of the same length and
    with further audio streams (``extra_audio``, same layout). Whatever sample format the encoder wants is
    produced by PyAV's resampler, so any PCM or compressed codec of FFmpeg's build works. ``hole=(at_ms,
    length_ms)`` leaves the audio timeline empty for ``length_ms`` after ``at_ms`` (a paused recorder);
    ``vfr`` writes the video at a variable frame rate (give ``video=(codec, 1000)``: a millisecond clock);
    ``size`` is the video's width and height."""
    channels = np.atleast_2d(np.asarray(channels, dtype=np.float32))
    layout = layout or {1: "mono", 2: "stereo", 6: "5.1"}[channels.shape[0]]
    if duration_ms is None:
        duration_ms = channels.shape[1] * 1000 // rate + audio_start_ms
    with av.open(str(path), mode="w", format=container_format, options=options or {}) as container:
        video_stream: av.VideoStream | None = None
        if video is not None:
            added_video = container.add_stream(video[0], rate=video[1])
            assert isinstance(added_video, av.VideoStream)
            video_stream = added_video
            video_stream.width, video_stream.height = size
            video_stream.pix_fmt = "yuv420p"
        streams = []
        for _ in range(1 + len(extra_audio or [])):
            added = container.add_stream(codec, rate=rate)
            assert isinstance(added, av.AudioStream)
            added.layout = layout
            streams.append(added)
        if video_stream is not None and video is not None:
            _write_video(container, video_stream, duration_ms, video[1], size, vfr=vfr)
        for stream, data in zip(streams, [channels, *(np.atleast_2d(e) for e in extra_audio or [])], strict=True):
            start = rate * audio_start_ms // 1000
            gap = (rate * hole[0] // 1000, rate * hole[1] // 1000) if hole else None
            _write_channels(container, stream, data, rate=rate, layout=layout, start_sample=start, hole=gap)
    return path


def _write_channels(
    container: av.container.OutputContainer,
    stream: av.AudioStream,
    channels: FloatArray,
    *,
    rate: int,
    layout: str,
    start_sample: int,
    hole: tuple[int, int] | None = None,
) -> None:
    size = stream.codec_context.frame_size or 1024
    target = stream.codec_context.format.name
    resampler = av.AudioResampler(format=target, layout=layout, rate=rate)
    for offset in range(0, channels.shape[1], size):
        chunk = np.ascontiguousarray(channels[:, offset : offset + size], dtype=np.float32)
        frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout=layout)
        frame.sample_rate = rate
        frame.pts = start_sample + offset + (hole[1] if hole and offset >= hole[0] else 0)
        frame.time_base = Fraction(1, rate)
        for out in resampler.resample(frame):
            for packet in stream.encode(out):
                container.mux(packet)
    for out in resampler.resample(None):
        for packet in stream.encode(out):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)


@functools.cache
def spoken(
    sentences: tuple[str, ...],
    rate: int,
    *,
    voice: str = "en-us",
    words_per_minute: int = 150,
    lead_ms: int = 500,
    gap_ms: int = 700,
) -> tuple[FloatArray, list[tuple[int, int, str]]]:
    """Sentences spoken by espeak-ng at ``rate`` (made once per process, shared by every test), and where
    each sentence's sound really is: ``(onset_ms, offset_ms, text)`` measured on the samples, without the
    silence espeak puts around its words."""
    parts: list[FloatArray] = [np.zeros(rate * lead_ms // 1000, dtype=np.float32)]
    truth: list[tuple[int, int, str]] = []
    position = len(parts[0])
    for index, sentence in enumerate(sentences):
        pcm, pcm_rate = speak(sentence, voice=voice, words_per_minute=words_per_minute)
        pcm = resample(pcm, pcm_rate, rate)
        sound = np.flatnonzero(np.abs(pcm) > 0.01)
        truth.append(((position + sound[0]) * 1000 // rate, (position + sound[-1]) * 1000 // rate, sentence))
        parts.append(pcm)
        position += len(pcm)
        parts.append(np.zeros(rate * (gap_ms if index < len(sentences) - 1 else lead_ms) // 1000, dtype=np.float32))
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
