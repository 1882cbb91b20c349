"""``transcribe_video``: the speech of a project's video or audio asset as a timestamped transcript.

The real work lives in :mod:`agent_app.media`; this module only declares the tool to pluggy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_app.media.transcription import run_transcribe_tool
from agent_app.plugins import hookimpl
from agent_app.types import ToolDefinition, ToolEnvironment, ToolParameter

PARAMETERS = [
    ToolParameter(
        key="assetId",
        type="string",
        required=False,
        description="Id of the media asset to transcribe; defaults to the active asset, or the only one.",
    ),
    ToolParameter(
        key="language",
        type="string",
        required=False,
        description="Spoken language as an ISO 639-1 code such as 'en'; detected when absent.",
    ),
    ToolParameter(
        key="startMs", type="number", required=False, description="Start of the range to transcribe, in milliseconds."
    ),
    ToolParameter(
        key="endMs", type="number", required=False, description="End of the range to transcribe, in milliseconds."
    ),
]


def transcribe_video(args: dict[str, Any], env: ToolEnvironment) -> dict[str, Any]:
    """``{assetId, durationMs, language, text, segments: [{startMs, endMs, text}], cached, ...}``, bounded
    in size; raises a user-grade error naming the asset when it cannot transcribe."""
    return run_transcribe_tool(args, env)


@hookimpl
def agent_app_tools() -> Sequence[ToolDefinition]:
    return [
        ToolDefinition(
            name="transcribe_video",
            description=(
                "Transcribe the speech in a video or audio asset of the project into timestamped "
                "segments. Use it whenever the user asks what is said in a clip. Long transcripts are "
                "returned in part (truncated: true); pass startMs/endMs to read a range."
            ),
            parameters=PARAMETERS,
            execute=transcribe_video,
        )
    ]
