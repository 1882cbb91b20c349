"""The offline backend: Moonshine's English tiny model, bundled in the ``moonshine-voice==0.1.0`` wheel.

Why this engine: it runs on a CPU at a few percent of real time, needs no download (0.1.0 is the last
release whose wheel carries the weights, hence the exact pin) and no API key, so the tool works on a fresh
machine without internet. ``transcribe_without_streaming`` runs the library's own voice-activity detection
and returns one line per utterance with its start and duration, which become our segments.

The model is loaded once per process and shared; calls are serialized by a lock because the native
library's thread safety is not documented and two sessions may transcribe at once.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from agent_app.media.audio import AudioInput
from agent_app.media.backends.base import BackendResult, BackendUnavailableError, ChunkProgress, fraction_done
from agent_app.media.transcript import TranscriptSegment

MODEL_NAME = "moonshine-tiny-en"
_BUNDLED_MODEL_DIR = "tiny-en"
CHUNK_SECONDS = 60.0
"""Audio handed to the library per call: bounds the per-call Python list (the binding copies samples
through one) and gives the progress bar something to show."""
_CUT_SEARCH_SECONDS = 10.0

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


def _load_model() -> Any:
    """The shared model; the lock keeps two first calls from loading it twice."""
    with _model_lock:
        return _bundled_model()


class LocalMoonshineBackend:
    """English speech to sentence-level segments, offline."""

    name = "local"
    model = MODEL_NAME

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: ChunkProgress) -> BackendResult:
        if language is not None and language.lower().split("-")[0] != "en":
            raise BackendUnavailableError(
                f"The local transcriber only understands English, not {language!r}; "
                "set TRANSCRIBE_BACKEND to openai or gemini for other languages"
            )
        model = _load_model()
        segments: list[TranscriptSegment] = []
        for chunk in audio.chunks(CHUNK_SECONDS, _CUT_SEARCH_SECONDS):
            if len(chunk.samples) >= chunk.sample_rate // 10:  # under 100 ms: nothing a model can hear
                samples = chunk.samples.tolist()
                with _run_lock:
                    transcript = model.transcribe_without_streaming(samples, chunk.sample_rate)
                del samples
                for line in transcript.lines:
                    text = str(line.text or "").strip()
                    if text:
                        start = chunk.offset_ms + float(line.start_time) * 1000
                        end = start + float(line.duration) * 1000
                        segments.append(TranscriptSegment(start_ms=round(start), end_ms=round(end), text=text))
            on_progress(fraction_done(audio, chunk.offset_ms + chunk.duration_ms))
        return BackendResult(segments=segments, language="en")
