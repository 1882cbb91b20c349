"""What the request-body tests of both adapters send: a system prompt with characters JSON escapes, and a tool
whose parameters cover a required one, an array and an integer."""

from __future__ import annotations

from agent_app.types import ToolParameter, ToolSchema

SYSTEM = 'You edit videos. Ünïcödé, "quotes", \\ and </script> stay as they are.'
TOOLS = [
    ToolSchema(
        name="transcribe_video",
        description="Transcribe a video",
        parameters=[
            ToolParameter(key="assetId", type="string", required=True, description="Which asset"),
            ToolParameter(key="tags", type="array"),
            ToolParameter(key="startMs", type="integer"),
        ],
    )
]
