"""``transcribe_video``: the speech of a project's video or audio asset as a timestamped transcript, sized
for the model.

The plugin owns what is the tool's: its arguments (validated once, by :class:`TranscribeVideoArgs`, before
the tool runs), which asset a call means, and how much of a transcript goes back to the model. The
transcription itself is reached through :mod:`agent_app.media`'s public API, the same the page's
transcript panel uses, so the two share one cache.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from agent_app.clock import clock_text
from agent_app.media import (
    Transcript,
    TranscriptionError,
    TranscriptionRequest,
    TranscriptSegment,
    edited_transcript,
    language_code,
    transcribe_asset,
)
from agent_app.tool_args import ToolArgs
from agent_app.tool_plugins import hookimpl
from agent_app.types import MediaAsset, ToolDefinition, ToolEnvironment

RESULT_TEXT_BUDGET = 8_000
"""Characters of transcript text returned to the model (the segments repeat it, so the JSON is about
twice this): roughly 10 minutes of speech, a few thousand tokens. The page keeps the full transcript."""
MAX_RESULT_SEGMENTS = 120
"""Above this many segments, neighbours are merged so timestamps stay useful without flooding the context."""


class TranscribeVideoArgs(ToolArgs):
    """The arguments of ``transcribe_video``; all optional, so ``{}`` transcribes the asset meant."""

    asset_id: str | None = Field(
        None, description="Id of the media asset to transcribe; defaults to the active asset, or the only one."
    )
    language: str | None = Field(
        None, description="Spoken language as an ISO 639-1 code such as 'en'; detected when absent."
    )
    start_ms: float | None = Field(None, ge=0, description="Start of the range to transcribe, in milliseconds.")
    end_ms: float | None = Field(None, ge=0, description="End of the range to transcribe, in milliseconds.")
    words: bool = Field(
        False,
        description="Also return each word with its startMs/endMs (for cutting on a word); makes the result "
        "several times longer, so ask only when word times are needed, ideally for a range.",
    )

    @field_validator("language")
    @classmethod
    def _language_code(cls, value: str | None) -> str | None:
        """``"en-US"`` or ``"English"`` → ``"en"``; anything else is a ``ValueError`` quoting the value."""
        return language_code(value)

    @model_validator(mode="after")
    def _range_goes_forwards(self) -> Self:
        start, end = round(self.start_ms or 0), self.end_ms
        if end is not None and round(end) <= start:
            raise ValueError(f"endMs ({round(end)}) must be greater than startMs ({start})")
        return self


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


def _merge(segments: list[TranscriptSegment], limit: int) -> list[TranscriptSegment]:
    """Neighbouring segments joined in groups so at most ``limit`` remain (their words kept, in order)."""
    if len(segments) <= limit:
        return segments
    size = math.ceil(len(segments) / limit)
    merged = []
    for index in range(0, len(segments), size):
        group = segments[index : index + size]
        merged.append(
            TranscriptSegment(
                start_ms=group[0].start_ms,
                end_ms=group[-1].end_ms,
                text=" ".join(s.text for s in group),
                words=[word for s in group for word in s.words],
            )
        )
    return merged


_WORD_OVERHEAD = 40
"""Characters one timed word adds to the result besides its text (``{"startMs": …, "endMs": …}``)."""


def _segment_result(transcript: Transcript, segment: TranscriptSegment, words: bool) -> dict[str, Any]:
    wire: dict[str, Any] = {"startMs": segment.start_ms, "endMs": segment.end_ms, "text": segment.text}
    if segment.speaker:
        wire["speaker"] = transcript.speaker_name(segment.speaker)
    if segment.original_text is not None:
        wire["correctedByUser"] = True
    if words:
        return {**wire, "words": [word.to_wire() for word in segment.words]}
    return wire


def _cost(segment: TranscriptSegment, words: bool) -> int:
    """What ``segment`` spends of the text budget: its text, and its timed words when they are sent."""
    return len(segment.text) + 1 + (sum(len(w.text) + _WORD_OVERHEAD for w in segment.words) if words else 0)


def tool_result(
    asset: MediaAsset, transcript: Transcript, cached: bool, budget: int = RESULT_TEXT_BUDGET, *, words: bool = False
) -> dict[str, Any]:
    """The camelCase result for the model, bounded to ``budget`` characters of text (and of timed words,
    when ``words`` asks for them)."""
    segments = _merge(transcript.segments, MAX_RESULT_SEGMENTS)
    kept: list[TranscriptSegment] = []
    used = 0
    for segment in segments:
        cost = _cost(segment, words)
        if kept and used + cost > budget:
            break
        kept.append(segment)
        used += cost
    result: dict[str, Any] = {
        "assetId": asset.id,
        "durationMs": transcript.duration_ms,
        "language": transcript.language,
        "text": " ".join(s.text for s in kept),
        "segments": [_segment_result(transcript, s, words) for s in kept],
        "cached": cached,
        "backend": transcript.backend,
    }
    speakers = list(dict.fromkeys(transcript.speaker_name(s.speaker) for s in transcript.segments if s.speaker))
    if speakers:
        result["speakers"] = speakers
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


def transcribe_video(args: TranscribeVideoArgs, env: ToolEnvironment) -> dict[str, Any]:
    """``{assetId, durationMs, language, speakers?, text, segments: [{startMs, endMs, text, speaker?, words?}],
    cached, ...}`` with the user's corrections and speaker names, bounded
    in size; raises a user-grade error naming the asset when it cannot transcribe."""
    asset = resolve_asset(args.asset_id, env)
    end_ms = round(args.end_ms) if args.end_ms is not None else None
    request = TranscriptionRequest(args.language, round(args.start_ms or 0), end_ms)
    transcript, cached = transcribe_asset(env, asset, request)
    if env.media is not None:  # the user's corrections and speaker names are the truth the model gets
        transcript = edited_transcript(transcript, env.media.transcript_edits(asset.id))
    return tool_result(asset, transcript, cached, words=args.words)


TRANSCRIBE_VIDEO = ToolDefinition(
    name="transcribe_video",
    description=(
        "Transcribe the speech in a video or audio asset of the project into timestamped "
        "segments; the result names the spoken language (detected unless given). Use it whenever "
        "the user asks what is said in a clip. Segments name their speaker once the user had speakers "
        "found, and carry the user's corrections (correctedByUser). Long transcripts are returned in part (truncated: "
        "true); pass startMs/endMs to read a range, and words: true for each word's times."
    ),
    arguments=TranscribeVideoArgs,
    execute=transcribe_video,
)


@hookimpl
def agent_app_tools() -> Sequence[ToolDefinition[Any]]:
    return [TRANSCRIBE_VIDEO]
