"""``echo_context``: returns the agent context it was given. A diagnostic tool, present but not
enabled by default (add it to ``AGENT_ENABLED_TOOLS`` to offer it to the model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_app.tool_args import ToolArgs
from agent_app.tool_plugins import hookimpl
from agent_app.types import ToolDefinition, ToolEnvironment


def echo_context(args: ToolArgs, env: ToolEnvironment) -> dict[str, Any]:
    """The context as JSON (camelCase), or ``{"context": null}`` when there is none."""
    return {"context": env.context.to_wire() if env.context is not None else None}


@hookimpl
def agent_app_tools() -> Sequence[ToolDefinition[Any]]:
    return [
        ToolDefinition(
            name="echo_context",
            description="Return the current project context (project, scene, media assets, playhead).",
            arguments=ToolArgs,
            execute=echo_context,
        )
    ]
