"""Transcribe one media asset (or a range of it), from the transcript cache or by the configured backend;
the ``transcribe_video`` tool and the page's Transcribe button both come here. Every failure is a
:class:`TranscriptionError` naming the asset and what to do: the model and the page show it as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_app.clock import clock_text
from agent_app.media.audio import AudioSource
from agent_app.media.backends.base import BackendRequestError, BackendUnavailableError, TranscriptionBackend
from agent_app.media.backends.config import create_backend, read_transcribe_settings
from agent_app.media.media_errors import MediaError
from agent_app.media.speaker_turns import with_speakers
from agent_app.media.stoppable import run_stoppable
from agent_app.media.transcript_cache import CacheKey
from agent_app.media.transcript_types import Transcript, clamp_segments
from agent_app.storage.base import StorageError
from agent_app.types import MediaAsset, ToolEnvironment

_log = logging.getLogger(__name__)

_HASH_SHARE = 0.05
"""Progress bar share of hashing the file; decoding and transcribing (interleaved) get the rest."""


class TranscriptionError(Exception):
    """A user-grade reason an asset could not be transcribed (shown as ``str(exc)``)."""


def _describe(asset: MediaAsset) -> str:
    """The asset as a user knows it: by its name (an error never shows an internal id)."""
    return repr(asset.name)


def _scaled(report: Callable[[float, str], None], low: float, high: float, message: str) -> Callable[[float], None]:
    return lambda fraction: report(low + (high - low) * min(1.0, max(0.0, fraction)), message)


@dataclass(frozen=True)
class TranscriptionRequest:
    """What of an asset to transcribe: its range ``[start_ms, end_ms)`` (``end_ms`` after ``start_ms``) in
    ``language``, an ISO 639-1 code (see ``language_code``), ``None`` to detect."""

    language: str | None = None
    start_ms: int = 0
    end_ms: int | None = None


def transcribe_asset(
    env: ToolEnvironment,
    asset: MediaAsset,
    request: TranscriptionRequest | None = None,
    *,
    backend: TranscriptionBackend | None = None,
) -> tuple[Transcript, bool]:
    """The transcript of ``asset`` (the whole of it unless ``request`` says otherwise) and whether it came
    from the cache. Uses ``env``'s media library (its file, read from the store, and its transcript cache; no
    data directory: no cache), settings (the
    backend, unless ``backend`` is given), progress sink and ``cancellation`` (answered with
    :class:`~agent_app.types.StopRequested` at once)."""
    request = request or TranscriptionRequest()
    media = env.media
    missing = TranscriptionError(f"Cannot transcribe {_describe(asset)}: its media file is missing from storage")
    if media is None:
        raise missing
    try:
        engine = backend if backend is not None else create_backend(read_transcribe_settings(env.settings))
    except BackendUnavailableError as exc:
        raise TranscriptionError(str(exc)) from exc
    report = env.report_progress
    try:
        cache = media.transcripts() if env.data_dir is not None else None
        key: CacheKey | None = None
        if cache is not None:
            report(0.0, "Checking for a saved transcript")
            digest = media.content_hash(asset.id, _scaled(report, 0.0, _HASH_SHARE, "Checking for a saved transcript"))
            if digest is None:
                raise missing
            key = CacheKey(digest, engine.name, engine.model, request.language, request.start_ms, request.end_ms)
            cached = cache.get(key)
            if cached is not None:
                report(1.0, "Loaded the saved transcript")
                return with_speakers(cache, key.content_hash, cached), True
        # An object store's file is downloaded whole to a temporary file first: decoders seek freely in it.
        with media.media_file(asset.id) as path:
            if path is None:
                raise missing
            transcript = _transcribe(env, asset, path, engine, request)
        if cache is not None and key is not None:
            cache.put(key, transcript, asset.id)
            transcript = with_speakers(cache, key.content_hash, transcript)
    except StorageError as exc:
        raise TranscriptionError(f"Cannot transcribe {_describe(asset)}: {exc}") from exc
    report(1.0, "Transcript ready")
    return transcript, False


def _transcribe(
    env: ToolEnvironment, asset: MediaAsset, path: Path, engine: TranscriptionBackend, request: TranscriptionRequest
) -> Transcript:
    """The media at ``path`` through ``engine``; every failure a :class:`TranscriptionError` naming ``asset``."""
    start, end_ms = request.start_ms, request.end_ms
    try:
        audio = AudioSource(path, start, end_ms)
    except MediaError as exc:
        raise TranscriptionError(f"Cannot transcribe {_describe(asset)}: {exc}") from exc
    duration_ms = audio.media_duration_ms
    if duration_ms is not None and start >= duration_ms:
        raise TranscriptionError(
            f"startMs ({start}) is past the end of {_describe(asset)}, which lasts {duration_ms} ms"
        )
    message = f"Transcribing with the {engine.name} backend"
    env.report_progress(_HASH_SHARE, message)
    try:
        result = run_stoppable(
            lambda progress: engine.transcribe(audio, request.language, progress),
            _scaled(env.report_progress, _HASH_SHARE, 0.99, message),
            env.cancellation,
        )
    except (MediaError, BackendUnavailableError, BackendRequestError) as exc:
        raise TranscriptionError(f"Cannot transcribe {_describe(asset)}: {exc}") from exc
    except Exception as exc:
        # An engine failing in a way we did not foresee (a native library error, an SDK change): the user
        # gets a readable sentence, the log gets the traceback.
        _log.exception("The %s transcription backend failed on asset %s", engine.name, asset.id)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise TranscriptionError(
            f"Cannot transcribe {_describe(asset)}: the {engine.name} transcriber failed ({reason})"
        ) from exc
    if duration_ms is None:  # a stream that does not declare its length: what was decoded is the truth
        duration_ms = start + audio.decoded_ms
    stop = duration_ms if end_ms is None else min(end_ms, duration_ms)
    return Transcript(
        notes=_damage_notes(audio),
        duration_ms=duration_ms,
        language=result.language or request.language,
        segments=clamp_segments(result.segments, start, max(start, stop)),
        backend=engine.name,
        model=result.model or engine.model,
        start_ms=start,
        end_ms=end_ms,
    )


def _damage_notes(audio: AudioSource) -> list[str]:
    """Sentences about stretches the transcript cannot cover: a file damaged mid-way still gets the
    words around the damage (more useful than nothing), but never passes as complete."""
    notes = []
    if audio.damaged_at_ms:
        places = ", ".join(clock_text(ms) for ms in sorted(set(audio.damaged_at_ms))[:5])
        notes.append(f"Part of the audio is damaged and could not be decoded (near {places}); words there are missing.")
    if audio.holes_ms:
        places = ", ".join(f"{clock_text(a)}–{clock_text(b)}" for a, b in audio.holes_ms[:5])
        notes.append(f"The audio has gaps ({places}); they are treated as silence.")
    return notes
