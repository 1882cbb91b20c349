"""The offline default backend: faster-whisper (CTranslate2) with the bundled Whisper models.

Why this engine: word timestamps, language detection and a voice-activity model, offline and on a CPU at a
fraction of real time (``bench/bench_transcription.py``). The model fits the language: English goes to
``tiny.en`` (fast), anything else to the multilingual ``base``; with no language given, ``base`` detects
it on the first piece that holds sound. ``TRANSCRIBE_MODEL`` names one model for everything instead.

What it taught: Whisper attaches a pause to the word after it (that word would start in the silence), so
word times are tightened to the sound (:mod:`agent_app.media.boundaries`), and a segment spans its words.
Progress is reported per segment, which is also where Stop is answered.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from agent_app.media.audio import AudioChunk, AudioInput
from agent_app.media.backends.base import (
    BackendResult,
    BackendUnavailableError,
    ChunkProgress,
    TranscribeSettings,
    fraction_done,
)
from agent_app.media.backends.whisper_models import BASE, TINY_EN, load_whisper
from agent_app.media.boundaries import tighten
from agent_app.media.transcript_types import TranscriptSegment, TranscriptWord

DEFAULT_MODEL = f"{TINY_EN.name}+{BASE.name}"
"""The default's name in the cache key: ``tiny.en`` for English, ``base`` for the rest."""
CHUNK_SECONDS = 60.0
"""Audio per call: Whisper works in 30 s windows anyway, and a minute bounds memory and shows progress."""
_CUT_SEARCH_SECONDS = 10.0
SILENCE_LEVEL = 3e-4
"""A piece whose loud samples stay under this (-70 dBFS) holds no speech: it is not transcribed."""
TARGET_LEVEL = 0.3
MAX_GAIN = 100.0
"""Quiet pieces are raised so their loud samples reach ``TARGET_LEVEL``, by at most 40 dB: the voice
detector misses speech near -50 dBFS."""
_LEVEL_PERCENTILE = 99.9
_DECODE_OPTIONS: dict[str, Any] = {
    "beam_size": 5,
    "word_timestamps": True,
    "vad_filter": True,
    "condition_on_previous_text": False,
}
"""Beam search (greedy decoding heard synthetic speech's "brown fox" as "roundfark"), int8 weights (as
accurate as float32 here and cheaper); no conditioning on the previous text, which lets one misheard
phrase repeat through a long recording."""

_load_lock = threading.Lock()
_run_lock = threading.Lock()


@functools.cache
def _cached_model(name: str) -> Any:
    return load_whisper(name)


def _model(name: str) -> Any:
    """The process-wide model called ``name``; the lock keeps two first calls from loading it twice."""
    with _load_lock:
        return _cached_model(name)


def _loudness_fixed(samples: np.ndarray) -> np.ndarray | None:
    """``samples`` raised to a level the voice detector hears, or ``None`` when the piece is silent."""
    if len(samples) < 1600:  # under 100 ms: nothing a model can hear
        return None
    level = float(np.percentile(np.abs(samples), _LEVEL_PERCENTILE))
    if level < SILENCE_LEVEL:
        return None
    if level >= TARGET_LEVEL:
        return samples
    raised: np.ndarray = np.clip(samples * min(MAX_GAIN, TARGET_LEVEL / level), -1.0, 1.0).astype(np.float32)
    return raised


class LocalWhisperBackend:
    """Speech in any of Whisper's languages to segments with timed words, offline."""

    name = "local"

    def __init__(self, settings: TranscribeSettings) -> None:
        self.model = settings.model or DEFAULT_MODEL
        self._fixed_model = settings.model

    def _model_for(self, language: str) -> str:
        if self._fixed_model is not None:
            if self._fixed_model.endswith(".en") and language != "en":
                raise BackendUnavailableError(
                    f"The model {self._fixed_model!r} (TRANSCRIBE_MODEL) only understands English, not {language!r}"
                )
            return self._fixed_model
        return TINY_EN.name if language == "en" else BASE.name

    def _detect(self, samples: np.ndarray) -> str:
        """The language heard in ``samples``, by the multilingual model (English for an English-only one)."""
        name = self._fixed_model or BASE.name
        model = _model(name)
        if not model.model.is_multilingual:
            return "en"
        with _run_lock:
            language, _probability, _ = model.detect_language(samples, vad_filter=True)
        return str(language)

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        heard = language
        used: str | None = None
        segments: list[TranscriptSegment] = []
        for chunk in audio.chunks(CHUNK_SECONDS, _CUT_SEARCH_SECONDS):
            samples = _loudness_fixed(chunk.samples)
            if samples is not None:
                heard = heard or self._detect(samples)
                used = self._model_for(heard)
                model = _model(used)
                with _run_lock:
                    pieces, _info = model.transcribe(samples, language=heard, **_DECODE_OPTIONS)
                    for piece in pieces:
                        segment = _segment(chunk, samples, piece)
                        if segment is not None:
                            segments.append(segment)
                            on_progress(fraction_done(audio, segment.end_ms))
            on_progress(fraction_done(audio, chunk.offset_ms + chunk.duration_ms))
        model_used = used if self._fixed_model is None and used is not None else self.model
        return BackendResult(segments=segments, language=heard, model=model_used)


def _segment(chunk: AudioChunk, samples: np.ndarray, piece: Any) -> TranscriptSegment | None:
    """One faster-whisper segment on the media's timeline, its words tightened to their sound."""
    text = str(piece.text or "").strip()
    if not text:
        return None
    words = [
        TranscriptWord(start_ms=start, end_ms=end, text=str(word.word).strip())
        for word in piece.words or ()
        if str(word.word or "").strip()
        for start, end in [_on_timeline(chunk, samples, float(word.start), float(word.end))]
    ]
    if words:
        return TranscriptSegment(start_ms=words[0].start_ms, end_ms=words[-1].end_ms, text=text, words=words)
    start, end = _on_timeline(chunk, samples, float(piece.start), float(piece.end))
    return TranscriptSegment(start_ms=start, end_ms=end, text=text)


def _on_timeline(chunk: AudioChunk, samples: np.ndarray, start_s: float, end_s: float) -> tuple[int, int]:
    """``[start_s, end_s]`` of the chunk narrowed to the sound inside it, in media milliseconds."""
    rate = chunk.sample_rate
    begin, end = tighten(samples, rate, round(start_s * rate), round(end_s * rate))
    chunk_end = chunk.offset_ms + chunk.duration_ms
    start_ms = min(chunk.offset_ms + round(begin * 1000 / rate), chunk_end)
    return start_ms, min(max(chunk.offset_ms + round(end * 1000 / rate), start_ms), chunk_end)
