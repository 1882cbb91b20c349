"""The shared types: importable from every module, snake_case in Python, camelCase on the wire."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import Field, ValidationError

import agent_app
from agent_app import types
from agent_app.orchestrator import Orchestrator
from agent_app.registry import ToolRegistry
from agent_app.routes.chat import chat_endpoint
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.tool_args import ToolArgs
from agent_app.types import (
    AgentContext,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    MediaAsset,
    ToolCall,
    ToolDefinition,
    ToolEnvironment,
    ToolResult,
)

PAGE_PACKAGE = "agent_app.ui."
"""Streamlit page modules may draw when imported; the page's AppTest tests run those instead."""
ROOT = Path(__file__).resolve().parent.parent
SHARED_TYPES = ("ChatMessage", "ToolCall", "ToolResult", "ExecutionState", "AgentContext", "ToolDefinition")
"""The spec's shared foundational types."""


def _shared_type_users() -> dict[str, Path]:
    """Every module of the app and its plugins that imports from ``agent_app.types``, by name."""
    users: dict[str, Path] = {}
    for path in sorted([*(ROOT / "agent_app").rglob("*.py"), *(ROOT / "plugins").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "agent_app.types":
                users[".".join(path.relative_to(ROOT).with_suffix("").parts)] = path
    return users


def test_types_are_importable_everywhere() -> None:
    """The spec's check is that TypeScript compiles every module importing ``types.ts``; here: the module
    exports the six shared types, the stores, orchestrator, registry and chat route are among the modules that
    import them, each of those modules imports, the project's strict mypy passes on all of them, and no
    other module defines a type of the same name (one source of truth)."""
    assert all(name in vars(types) for name in SHARED_TYPES)
    users = _shared_type_users()
    spec_places = {ChatStore, AgentStore, Orchestrator, ToolRegistry, chat_endpoint}
    assert {place.__module__ for place in spec_places} <= users.keys()
    for name in users:
        importlib.import_module(name)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", *(str(path.relative_to(ROOT)) for path in users.values())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for path in [*(ROOT / "agent_app").rglob("*.py"), *(ROOT / "plugins").glob("*.py")]:
        if path != ROOT / "agent_app" / "types.py":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
            defined |= {
                target.id
                for node in ast.walk(tree)
                if isinstance(node, ast.Assign | ast.AnnAssign)
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)
            }
            assert not defined & set(SHARED_TYPES), (
                f"{path.relative_to(ROOT)} defines its own {defined & set(SHARED_TYPES)}"
            )


def test_every_module_of_the_package_imports() -> None:
    """An import cycle or a missing name anywhere in the package fails here, not on a user's first click
    (page modules draw when imported; the page's AppTest tests run those)."""
    for module in pkgutil.walk_packages(agent_app.__path__, prefix="agent_app."):
        if not module.name.startswith(PAGE_PACKAGE):
            importlib.import_module(module.name)


def test_camel_case_wire_form_round_trips_both_ways() -> None:
    wire = {
        "id": "m1",
        "role": "assistant",
        "content": "",
        "toolCalls": [{"id": "c1", "name": "transcribe_video", "args": {"assetId": "a1", "startMs": 0}}],
        "timestamp": 1700000000000,
        "providerMetadata": {"gemini": {"thoughtSignature": "c2lnbmF0dXJl"}},
    }
    message = ChatMessage.model_validate(wire)
    assert message.tool_calls == [ToolCall(id="c1", name="transcribe_video", args={"assetId": "a1", "startMs": 0})]
    assert message.provider_metadata == {"gemini": {"thoughtSignature": "c2lnbmF0dXJl"}}
    assert message.to_wire() == wire  # args and opaque metadata keep their own keys untouched
    assert ChatMessage.model_validate_json(json.dumps(message.to_wire())) == message

    # Python -> wire -> Python, from snake_case construction.
    result = ToolResult(tool_call_id="c1", name="transcribe_video", result={"text": "hi"}, duration_ms=12)
    tool_message = ChatMessage(role="tool", content="done", tool_result=result)
    tool_wire = tool_message.to_wire()
    assert tool_wire["toolResult"] == {
        "toolCallId": "c1",
        "name": "transcribe_video",
        "result": {"text": "hi"},
        "durationMs": 12,
    }
    assert ChatMessage.model_validate(tool_wire) == tool_message

    context = AgentContext(
        project_id="p1",
        active_scene_id="s1",
        media_assets=[MediaAsset(id="a1", name="clip.mp4", duration_ms=5000)],
        playback_time_ms=1200,
    )
    context_wire = context.to_wire()
    assert context_wire == {
        "projectId": "p1",
        "activeSceneId": "s1",
        "mediaAssets": [{"id": "a1", "name": "clip.mp4", "kind": "video", "durationMs": 5000}],
        "playbackTimeMs": 1200,
    }
    assert AgentContext.model_validate(context_wire) == context

    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hello"}], "context": context_wire})
    assert request.context == context
    assert ChatRequest.model_validate(request.to_wire()).to_wire() == request.to_wire()

    response = ChatResponse.model_validate({"content": "Hello!", "toolCalls": []})
    assert response.to_wire() == {"content": "Hello!", "toolCalls": []}


def test_tool_definition_exports_a_schema_without_the_callable() -> None:
    class Args(ToolArgs):
        asset_id: str = Field(description="which asset")

    def execute(args: Args, env: ToolEnvironment) -> object:
        return args

    tool = ToolDefinition(name="t", description="d", arguments=Args, execute=execute)
    schema = tool.to_schema()
    assert schema.to_wire() == {
        "name": "t",
        "description": "d",
        "parameters": [{"key": "assetId", "type": "string", "required": True, "description": "which asset"}],
    }
    with pytest.raises(ValidationError):  # a parameter is frozen: the export cannot change the tool
        schema.parameters[0].required = False  # type: ignore[misc]
    assert tool.parameters[0].required is True


def test_messages_and_their_results_cannot_change_in_place() -> None:
    """A change to a message is a copy (``model_copy(update=...)``): a history sent once is sent unchanged."""
    message = ChatMessage(role="user", content="abc")
    assert message.model_copy(update={"content": "a longer text"}).content == "a longer text"
    with pytest.raises(ValidationError, match="frozen"):
        message.content = "changed"  # type: ignore[misc]
    result = ToolResult(tool_call_id="c1", name="t", result={"a": 1})
    with pytest.raises(ValidationError, match="frozen"):
        result.result = {"b": 2}  # type: ignore[misc]
