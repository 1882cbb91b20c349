"""The other offline backend (``TRANSCRIBE_BACKEND=moonshine``): Moonshine's English tiny model, bundled in
the ``moonshine-voice==0.1.0`` wheel. Sentence segments without word times.

Why this engine: it runs on a CPU at a few percent of real time and needs no download (0.1.0 is the last
release whose wheel carries the weights, hence the exact pin) and no key. The model is loaded once per
process; calls are serialized because the native library's thread safety is not documented.

What real recordings taught (see :func:`prepare_chunk`): the library keeps state between calls (a piece
ending mid-word makes the next start with a made-up "You", so pieces get trailing silence); its voice
detector misses speech around -50 dBFS (quiet pieces are raised, at most +40 dB); its segments start early
and end late (tightened by :mod:`agent_app.media.boundaries`); digital silence is not sent at all.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from agent_app.media.audio import AudioInput
from agent_app.media.backends.base import BackendResult, BackendUnavailableError, ChunkProgress, fraction_done
from agent_app.media.boundaries import tighten
from agent_app.media.transcript_types import TranscriptSegment

MODEL_NAME = "moonshine-tiny-en"
_BUNDLED_MODEL_DIR = "tiny-en"
CHUNK_SECONDS = 60.0
"""Audio handed to the library per call: bounds the per-call Python list (the binding copies samples
through one) and gives the progress bar something to show."""
_CUT_SEARCH_SECONDS = 10.0
TRAILING_SILENCE_SECONDS = 0.5
"""Silence appended to every piece so the library closes its last utterance and starts the next call clean."""
SILENCE_LEVEL = 3e-4
"""A piece whose loud samples stay under this (-70 dBFS) holds no speech: it is not transcribed."""
TARGET_LEVEL = 0.3
MAX_GAIN = 100.0
"""Quiet pieces are amplified so their loud samples reach ``TARGET_LEVEL``, by at most 40 dB."""
_LEVEL_PERCENTILE = 99.9
"""The level of a piece: a high percentile of magnitudes, so one click does not count as loud speech."""

_model_lock = threading.Lock()
_run_lock = threading.Lock()


@functools.cache
def _bundled_model() -> Any:
    """The process-wide Moonshine transcriber, loaded from the wheel's bundled files (cached once loaded)."""
    try:
        from moonshine_voice import ModelArch, Transcriber, get_model_path
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise BackendUnavailableError("The local transcriber needs the Python package moonshine-voice==0.1.0") from exc
    model_dir = get_model_path(_BUNDLED_MODEL_DIR)
    if not (model_dir / "encoder_model.ort").is_file():
        raise BackendUnavailableError(
            "The local transcriber's bundled model is missing: install moonshine-voice==0.1.0 exactly "
            "(later releases download the weights at run time)"
        )
    # Per-line audio copies are only useful to voice apps; skipping them saves time and memory.
    return Transcriber(str(model_dir), ModelArch.TINY, options={"return_audio_data": "false"})


def prepare_chunk(samples: np.ndarray, sample_rate: int) -> list[float] | None:
    """The samples to hand the model for one piece, or ``None`` when the piece is silent.

    Returned as a Python list because that is what the binding copies from."""
    if len(samples) < sample_rate // 10:  # under 100 ms: nothing a model can hear
        return None
    level = float(np.percentile(np.abs(samples), _LEVEL_PERCENTILE))
    if level < SILENCE_LEVEL:
        return None
    gain = min(MAX_GAIN, TARGET_LEVEL / level) if level < TARGET_LEVEL else 1.0
    padded = np.zeros(len(samples) + int(TRAILING_SILENCE_SECONDS * sample_rate), dtype=np.float32)
    np.multiply(samples, gain, out=padded[: len(samples)], casting="unsafe")
    np.clip(padded, -1.0, 1.0, out=padded)
    result: list[float] = padded.tolist()
    return result


def _load_model() -> Any:
    """The shared model; the lock keeps two first calls from loading it twice."""
    with _model_lock:
        return _bundled_model()


class LocalMoonshineBackend:
    """English speech to sentence-level segments, offline."""

    name = "moonshine"
    model = MODEL_NAME

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        if language is not None and language.lower().split("-")[0] != "en":
            raise BackendUnavailableError(
                f"The local transcriber only understands English, not {language!r}; "
                "set TRANSCRIBE_BACKEND to local (faster-whisper), openai or gemini for other languages"
            )
        model = _load_model()
        segments: list[TranscriptSegment] = []
        for chunk in audio.chunks(CHUNK_SECONDS, _CUT_SEARCH_SECONDS):
            samples = prepare_chunk(chunk.samples, chunk.sample_rate)
            if samples is not None:
                with _run_lock:
                    transcript = model.transcribe_without_streaming(samples, chunk.sample_rate)
                del samples
                chunk_end = chunk.offset_ms + chunk.duration_ms
                rate = chunk.sample_rate
                for line in transcript.lines:
                    text = str(line.text or "").strip()
                    if text:
                        begin = round(float(line.start_time) * rate)
                        begin, end = tighten(chunk.samples, rate, begin, begin + round(float(line.duration) * rate))
                        start_ms = min(chunk.offset_ms + begin * 1000 / rate, chunk_end)
                        end_ms = min(chunk.offset_ms + end * 1000 / rate, chunk_end)
                        segments.append(TranscriptSegment(start_ms=round(start_ms), end_ms=round(end_ms), text=text))
            on_progress(fraction_done(audio, chunk.offset_ms + chunk.duration_ms))
        return BackendResult(segments=segments, language="en")
