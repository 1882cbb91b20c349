"""Who speaks when: speaker turns from Moonshine's offline diarization (``identify_speakers`` of
``moonshine-voice``), found once per file content and kept in the transcript store beside its transcripts,
so every transcript of the file (any backend, made before or after) shows S1, S2… on its segments.

Opt-in per asset (it costs several times what tiny.en's transcription does). The audio is streamed to the
library in short pieces: its clustering keeps speakers' identities across the whole stream, the progress
bar moves and Stop is answered between pieces (see :mod:`agent_app.media.stoppable`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from agent_app.media.audio import AudioInput, AudioSource
from agent_app.media.backends.base import BackendUnavailableError, fraction_done
from agent_app.media.media_errors import MediaError
from agent_app.media.speaker_turns import put_speaker_turns
from agent_app.media.stoppable import run_stoppable
from agent_app.media.transcriber import TranscriptionError
from agent_app.media.transcript_types import SpeakerTurn
from agent_app.storage.base import StorageError
from agent_app.types import MediaAsset, ToolEnvironment

PIECE_SECONDS = 10.0
"""Audio handed to the stream per call: the grain of progress and of Stop."""
_CUT_SEARCH_SECONDS = 2.0
_lock = threading.Lock()
"""One diarization at a time per process: the native library's thread safety is not documented (a second
job waits here, its Stop answered at once)."""


@functools.cache
def _diarizer() -> Any:
    """The process-wide Moonshine transcriber with speaker identification on, from the wheel's files."""
    try:
        from moonshine_voice import ModelArch, Transcriber, get_model_path
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise BackendUnavailableError("Finding speakers needs the Python package moonshine-voice==0.1.0") from exc
    options = {"return_audio_data": "false", "identify_speakers": "true"}
    return Transcriber(str(get_model_path("tiny-en")), ModelArch.TINY, options=options)


def diarize(audio: AudioInput, on_progress: Callable[[float], None]) -> list[SpeakerTurn]:
    """The speaker turns of ``audio`` in time order, labelled ``S1``, ``S2``… by first appearance."""
    with _lock:
        on_progress(0.0)  # a diarization stopped while it waited for the lock ends here, before loading a model
        stream = _diarizer().create_stream()
        try:
            stream.start()
            for chunk in audio.chunks(PIECE_SECONDS, _CUT_SEARCH_SECONDS):
                samples = np.clip(chunk.samples, -1.0, 1.0).astype(np.float32)
                stream.add_audio(samples.tolist(), chunk.sample_rate)
                on_progress(fraction_done(audio, chunk.offset_ms + chunk.duration_ms))
            transcript = stream.stop()
        finally:
            stream.close()
    spans = [span for line in (transcript.lines if transcript else []) for span in line.speaker_spans or []]
    labels: dict[int, str] = {}
    turns = []
    offset = audio.start_ms
    for span in sorted(spans, key=lambda s: s.start_time):
        label = labels.setdefault(int(span.speaker_index), f"S{len(labels) + 1}")
        start = offset + round(float(span.start_time) * 1000)
        turns.append(SpeakerTurn(start_ms=start, end_ms=start + round(float(span.duration) * 1000), speaker=label))
    return turns


def find_speakers(env: ToolEnvironment, asset: MediaAsset) -> list[SpeakerTurn]:
    """Identify the speakers of ``asset`` (progress and Stop through ``env``) and keep the turns in the
    transcript store under the file's content; a :class:`TranscriptionError` a user can read when it cannot."""
    media = env.media
    missing = TranscriptionError(f"Cannot find the speakers of {asset.name!r}: its media file is missing from storage")
    if media is None:
        raise missing
    message = "Finding who speaks when"
    try:
        env.report_progress(0.0, "Reading the file")
        digest = media.content_hash(asset.id)
        if digest is None:
            raise missing
        with media.media_file(asset.id) as path:
            if path is None:
                raise missing
            audio = AudioSource(path)
            turns = run_stoppable(
                lambda progress: diarize(audio, progress),
                lambda fraction: env.report_progress(0.05 + 0.94 * min(1.0, max(0.0, fraction)), message),
                env.cancellation,
            )
        put_speaker_turns(media.transcripts(), digest, turns)
    except (MediaError, BackendUnavailableError, StorageError) as exc:
        raise TranscriptionError(f"Cannot find the speakers of {asset.name!r}: {exc}") from exc
    env.report_progress(1.0, "Speakers found")
    return turns
