"""The ``transcribe_video`` tool's logic: resolve the asset, answer from the cache or extract and
transcribe, store the full transcript, and return a bounded, model-sized result.

Every failure is a :class:`TranscriptionError` whose message names the asset and says what to do: the
orchestrator hands exception messages to the model and the page as the tool's error.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from agent_app.clock import clock_text
from agent_app.media.audio import AudioSource
from agent_app.media.backends.base import BackendRequestError, BackendUnavailableError, TranscriptionBackend
from agent_app.media.backends.config import create_backend
from agent_app.media.media_errors import MediaError
from agent_app.media.transcript import Transcript, TranscriptSegment, clamp_segments
from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.types import MediaAsset, ToolEnvironment

_log = logging.getLogger(__name__)

RESULT_TEXT_BUDGET = 8_000
"""Characters of transcript text returned to the model (the segments repeat it, so the JSON is about
twice this): roughly 10 minutes of speech, a few thousand tokens. The page keeps the full transcript."""
MAX_RESULT_SEGMENTS = 120
"""Above this many segments, neighbours are merged so timestamps stay useful without flooding the context."""

_HASH_SHARE = 0.05
"""Progress bar share of hashing the file; decoding and transcribing (interleaved) get the rest."""


class TranscriptionError(Exception):
    """A user-grade reason the tool could not transcribe (the orchestrator shows ``str(exc)``)."""


def _describe(asset: MediaAsset) -> str:
    return f"{asset.name!r} (id {asset.id})"


def _asset_list(assets: list[MediaAsset]) -> str:
    return "; ".join(f"{a.id} ({a.name})" for a in assets) or "none"


def resolve_asset(asset_id: str | None, env: ToolEnvironment) -> MediaAsset:
    """The asset named by ``asset_id``; else the active asset; else the only one; else an error listing them."""
    assets = list(env.context.media_assets) if env.context is not None else []
    if asset_id:
        for asset in assets:
            if asset.id == asset_id:
                return asset
        found = env.media.get_asset(asset_id) if env.media is not None else None
        if found is not None:
            return found
        raise TranscriptionError(f"No media asset has id {asset_id!r}. The project's assets: {_asset_list(assets)}")
    active_id = env.context.active_asset_id if env.context is not None else None
    if active_id:
        for asset in assets:
            if asset.id == active_id:
                return asset
    if len(assets) == 1:
        return assets[0]
    if not assets:
        raise TranscriptionError("The project has no media assets yet: upload a video or audio file first")
    raise TranscriptionError(
        f"Several assets could be meant; call transcribe_video again with assetId set to one of: {_asset_list(assets)}"
    )


def _scaled(report: Callable[[float, str], None], low: float, high: float, message: str) -> Callable[[float], None]:
    return lambda fraction: report(low + (high - low) * min(1.0, max(0.0, fraction)), message)


def transcribe_asset(
    env: ToolEnvironment,
    asset: MediaAsset,
    *,
    language: str | None = None,
    start_ms: int | None = None,
    end_ms: int | None = None,
    backend: TranscriptionBackend | None = None,
) -> tuple[Transcript, bool]:
    """The transcript of ``asset`` (or its range) and whether it came from the cache."""
    start = start_ms or 0
    path = env.media.media_path(asset.id) if env.media is not None else None
    if path is None or not path.is_file():
        raise TranscriptionError(f"Cannot transcribe {_describe(asset)}: its media file is missing from storage")
    report = env.report_progress
    try:
        engine = backend if backend is not None else create_backend()
    except BackendUnavailableError as exc:
        raise TranscriptionError(str(exc)) from exc
    cache = TranscriptCache(env.data_dir) if env.data_dir is not None else None
    key: CacheKey | None = None
    if cache is not None:
        report(0.0, "Checking for a saved transcript")
        digest = cache.content_hash(path, _scaled(report, 0.0, _HASH_SHARE, "Checking for a saved transcript"))
        key = CacheKey(digest, engine.name, engine.model, language, start, end_ms)
        cached = cache.get(key)
        if cached is not None:
            report(1.0, "Loaded the saved transcript")
            return cached, True
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
    report(_HASH_SHARE, message)
    try:
        result = engine.transcribe(audio, language, _scaled(report, _HASH_SHARE, 0.99, message))
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
    transcript = Transcript(
        notes=_damage_notes(audio),
        duration_ms=duration_ms,
        language=result.language or language,
        segments=clamp_segments(result.segments, start, max(start, stop)),
        backend=engine.name,
        model=engine.model,
        start_ms=start,
        end_ms=end_ms,
    )
    if cache is not None and key is not None:
        cache.put(key, transcript, asset.id)
    report(1.0, "Transcript ready")
    return transcript, False


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


def _merge(segments: list[TranscriptSegment], limit: int) -> list[TranscriptSegment]:
    """Neighbouring segments joined in groups so at most ``limit`` remain."""
    if len(segments) <= limit:
        return segments
    size = math.ceil(len(segments) / limit)
    merged = []
    for index in range(0, len(segments), size):
        group = segments[index : index + size]
        merged.append(
            TranscriptSegment(start_ms=group[0].start_ms, end_ms=group[-1].end_ms, text=" ".join(s.text for s in group))
        )
    return merged


def tool_result(
    asset: MediaAsset, transcript: Transcript, cached: bool, budget: int = RESULT_TEXT_BUDGET
) -> dict[str, Any]:
    """The camelCase result for the model, bounded to ``budget`` characters of text."""
    segments = _merge(transcript.segments, MAX_RESULT_SEGMENTS)
    kept: list[TranscriptSegment] = []
    used = 0
    for segment in segments:
        if kept and used + len(segment.text) + 1 > budget:
            break
        kept.append(segment)
        used += len(segment.text) + 1
    result: dict[str, Any] = {
        "assetId": asset.id,
        "durationMs": transcript.duration_ms,
        "language": transcript.language,
        "text": " ".join(s.text for s in kept),
        "segments": [s.to_wire() for s in kept],
        "cached": cached,
        "backend": transcript.backend,
    }
    if not transcript.is_full:
        result["startMs"] = transcript.start_ms
        result["endMs"] = transcript.end_ms if transcript.end_ms is not None else transcript.duration_ms
    if len(kept) < len(segments):
        resume = segments[len(kept)].start_ms
        result["truncated"] = True
        result["note"] = (
            f"Transcript cut at {clock_text(resume)} of {clock_text(transcript.duration_ms)} to fit; the page's "
            f"transcript panel has all of it. Call transcribe_video with startMs={resume} to read on."
        )
    elif len(segments) < len(transcript.segments):
        result["note"] = "Neighbouring segments were merged to keep the result short."
    if not transcript.segments:
        result["note"] = "No speech was recognized."
    if transcript.notes:
        result["note"] = " ".join([*transcript.notes, result.get("note", "")]).strip()
    return result
