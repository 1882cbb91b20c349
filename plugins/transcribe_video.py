"""``transcribe_video``: the speech of a project's video or audio asset as a timestamped transcript.

The plugin declares the tool: its arguments (validated once, by :class:`TranscribeVideoArgs`, before the
tool runs) and what a call does with them; the transcription itself is :mod:`agent_app.media`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from agent_app.media.language import language_code
from agent_app.media.transcription import resolve_asset, tool_result, transcribe_asset
from agent_app.plugins import hookimpl
from agent_app.tool_args import ToolArgs
from agent_app.types import ToolDefinition, ToolEnvironment


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


def transcribe_video(args: TranscribeVideoArgs, env: ToolEnvironment) -> dict[str, Any]:
    """``{assetId, durationMs, language, text, segments: [{startMs, endMs, text}], cached, ...}``, bounded
    in size; raises a user-grade error naming the asset when it cannot transcribe."""
    asset = resolve_asset(args.asset_id, env)
    start_ms = round(args.start_ms) if args.start_ms is not None else None
    end_ms = round(args.end_ms) if args.end_ms is not None else None
    transcript, cached = transcribe_asset(env, asset, language=args.language, start_ms=start_ms, end_ms=end_ms)
    return tool_result(asset, transcript, cached)


TRANSCRIBE_VIDEO = ToolDefinition(
    name="transcribe_video",
    description=(
        "Transcribe the speech in a video or audio asset of the project into timestamped "
        "segments. Use it whenever the user asks what is said in a clip. Long transcripts are "
        "returned in part (truncated: true); pass startMs/endMs to read a range."
    ),
    arguments=TranscribeVideoArgs,
    execute=transcribe_video,
)


@hookimpl
def agent_app_tools() -> Sequence[ToolDefinition[Any]]:
    return [TRANSCRIBE_VIDEO]
