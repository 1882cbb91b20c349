"""The tool registry built from plugins and settings."""

from __future__ import annotations

import pytest

from agent_app.plugins import ToolConfigurationError, build_tool_registry
from agent_app.registry import DefinitionRegistry, DuplicateDefinitionError


def test_default_settings_register_exactly_transcribe_video(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_ENABLED_TOOLS", raising=False)
    registry = build_tool_registry()
    assert registry.names() == ["transcribe_video"]
    assert not registry.has("echo_context")


def test_enabling_echo_context_adds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "transcribe_video,echo_context")
    assert build_tool_registry().names() == ["transcribe_video", "echo_context"]


def test_unknown_enabled_tool_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "transcribe_video,summon_dragon")
    with pytest.raises(ToolConfigurationError, match="summon_dragon"):
        build_tool_registry()


def test_registering_a_key_twice_is_an_error() -> None:
    registry: DefinitionRegistry[str, int] = DefinitionRegistry()
    registry.register("a", 1)
    with pytest.raises(DuplicateDefinitionError):
        registry.register("a", 2)
    assert registry.get("a") == 1


def test_schema_export_produces_internal_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_ENABLED_TOOLS", raising=False)
    schemas = build_tool_registry().to_tool_schemas()
    assert len(schemas) == 1
    wire = schemas[0].to_wire()
    assert wire["name"] == "transcribe_video"
    assert wire["description"]
    asset_id = next(p for p in wire["parameters"] if p["key"] == "assetId")
    assert asset_id == {"key": "assetId", "type": "string", "required": False, "description": asset_id["description"]}
    assert "execute" not in wire
