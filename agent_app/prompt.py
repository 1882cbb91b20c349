"""The system prompt: who the assistant is, what the user's workspace holds right now, what the tools do.

Why the context goes into the prompt: the model can only pass an asset id it has seen, and "this video"
or "here" mean the active asset and the playhead. Ids are quoted exactly so the model copies them.
Provider-neutral text: each adapter puts it where its provider wants a system prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_app.types import AgentContext, MediaAsset, ToolSchema

ROLE = (
    "You are the assistant of a video creator, working inside their editing workspace. "
    "Answer concisely. When a question is about what is said in a video or audio file, use the tools "
    "instead of guessing, and pass asset ids exactly as listed below. Times are in milliseconds unless "
    "you say otherwise; when you quote moments of a transcript, give their timestamps (mm:ss). "
    "If a tool fails, explain what went wrong and what the user can do."
)


def format_ms(ms: int | None) -> str:
    """``m:ss.mmm`` (or ``h:mm:ss.mmm``) for a duration or position; ``unknown`` for ``None``."""
    if ms is None:
        return "unknown"
    hours, rest = divmod(max(ms, 0), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    if hours:
        return f"{hours}:{minutes:02d}:{seconds:02d}.{millis:03d}"
    return f"{minutes}:{seconds:02d}.{millis:03d}"


def _asset_line(asset: MediaAsset, active_id: str | None) -> str:
    details = [asset.kind, f"duration {format_ms(asset.duration_ms)}"]
    marker = " (active, shown in the player)" if asset.id == active_id else ""
    return f'- id "{asset.id}": {asset.name} ({", ".join(details)}){marker}'


def _context_section(context: AgentContext | None) -> list[str]:
    if context is None:
        return ["No project is open; there are no media assets."]
    lines = [f'Project id: "{context.project_id}".']
    lines.append(f'Active scene: "{context.active_scene_id}".' if context.active_scene_id else "No active scene.")
    if context.media_assets:
        lines.append("Media assets of the project:")
        lines.extend(_asset_line(asset, context.active_asset_id) for asset in context.media_assets)
    else:
        lines.append("The project has no media assets yet; the user can upload videos in the sidebar.")
    if context.active_asset_id and all(a.id != context.active_asset_id for a in context.media_assets):
        lines.append(f'Active asset id: "{context.active_asset_id}".')
    lines.append(f"Playhead position: {format_ms(context.playback_time_ms)} ({context.playback_time_ms} ms).")
    return lines


def _tools_section(tool_schemas: Sequence[ToolSchema]) -> list[str]:
    if not tool_schemas:
        return ["No tools are available in this session; answer from the conversation alone."]
    lines = ["Tools you can call:"]
    for schema in tool_schemas:
        lines.append(f"- {schema.name}: {schema.description}")
        for parameter in schema.parameters:
            need = "required" if parameter.required else "optional"
            text = f" — {parameter.description}" if parameter.description else ""
            lines.append(f"    - {parameter.key} ({parameter.type}, {need}){text}")
    return lines


def build_system_prompt(context: AgentContext | None, tool_schemas: Sequence[ToolSchema] = ()) -> str:
    """The system prompt for one request: role, workspace context, tools."""
    sections = [
        ROLE,
        "\n".join(["## Workspace", *_context_section(context)]),
        "\n".join(["## Tools", *_tools_section(tool_schemas)]),
    ]
    return "\n\n".join(sections)
