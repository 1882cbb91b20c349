"""Tool-argument validation against declared parameters (the orchestrator's use is in test_orchestrator)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_app.plugins import build_tool_registry
from agent_app.types import ParameterType, ToolDefinition, ToolEnvironment, ToolParameter
from agent_app.validation import describe_unknown_tool, normalize_tool_args, validate_tool_args


def tool_with(*parameters: ToolParameter) -> ToolDefinition:
    def execute(args: dict[str, Any], env: ToolEnvironment) -> None:
        raise AssertionError("validation never runs the tool")

    return ToolDefinition(name="t", description="test", parameters=list(parameters), execute=execute)


def required(key: str, type_: ParameterType) -> ToolParameter:
    return ToolParameter(key=key, type=type_, required=True)


def test_real_transcribe_video_accepts_empty_args() -> None:
    tool = build_tool_registry(["transcribe_video"]).get("transcribe_video")
    assert tool is not None
    assert validate_tool_args(tool, {}) is None
    assert validate_tool_args(tool, {"assetId": "a1"}) is None
    error = validate_tool_args(tool, {"assetId": 123})
    assert error is not None and "assetId" in error


@pytest.mark.parametrize(
    ("type_", "good", "bad"),
    [
        ("string", ["", "a"], [1, None, True, ["a"]]),
        ("number", [0, -1, 2.5, 3.0], [True, False, "1", float("nan"), float("inf"), None]),
        ("integer", [0, -7, 3.0], [True, 2.5, "3", None]),
        ("boolean", [True, False], [0, 1, "true", None]),
        ("object", [{}, {"a": 1}], [[], "{}", None]),
        ("array", [[], [1, "a"]], [{}, "[]", None]),
    ],
)
def test_each_declared_type(type_: ParameterType, good: list[Any], bad: list[Any]) -> None:
    tool = tool_with(required("value", type_))
    for value in good:
        assert validate_tool_args(tool, {"value": value}) is None, value
    for value in bad:
        error = validate_tool_args(tool, {"value": value})
        assert error is not None, value
        assert "'value'" in error


def test_true_is_not_a_number() -> None:
    error = validate_tool_args(tool_with(required("startMs", "number")), {"startMs": True})
    assert error == "Invalid arguments for t: argument 'startMs' must be a number, got boolean True"


def test_missing_and_null_required_arguments_are_named() -> None:
    tool = tool_with(required("assetId", "string"), required("language", "string"))
    assert validate_tool_args(tool, {"language": None}) == (
        "Invalid arguments for t: required argument 'assetId' (string) is missing; "
        "required argument 'language' (string) is null"
    )


def test_present_optional_argument_must_have_its_type() -> None:
    tool = tool_with(ToolParameter(key="language", type="string"))
    assert validate_tool_args(tool, {}) is None
    assert validate_tool_args(tool, {"language": None}) is None  # null means "not given"
    error = validate_tool_args(tool, {"language": ["en"]})
    assert error == "Invalid arguments for t: argument 'language' must be a string, got array ['en']"


def test_undeclared_arguments_pass_through() -> None:
    tool = tool_with(ToolParameter(key="language", type="string"))
    assert validate_tool_args(tool, {"mood": 3}) is None
    assert normalize_tool_args(tool, {"mood": 3}) == {"mood": 3}


def test_long_values_are_abbreviated_in_the_error() -> None:
    error = validate_tool_args(tool_with(required("n", "integer")), {"n": "x" * 500})
    assert error is not None and len(error) < 150 and error.endswith("...")


def test_arguments_that_are_not_an_object() -> None:
    error = validate_tool_args(tool_with(), ["a"])  # type: ignore[arg-type]
    assert error == "Arguments of t must be an object, got array"


def test_normalize_drops_null_optionals_and_makes_integral_floats_ints() -> None:
    tool = tool_with(
        required("count", "integer"),
        ToolParameter(key="language", type="string"),
        ToolParameter(key="ratio", type="number"),
    )
    normalized = normalize_tool_args(tool, {"count": 4.0, "language": None, "ratio": 2.0})
    assert normalized == {"count": 4, "ratio": 2.0}
    assert isinstance(normalized["count"], int)
    assert isinstance(normalized["ratio"], float)


def test_describe_unknown_tool_lists_the_registered_names() -> None:
    registry = build_tool_registry(["transcribe_video", "echo_context"])
    assert describe_unknown_tool("summon_dragon", registry.names()) == (
        "Unknown tool 'summon_dragon'. Available tools: transcribe_video, echo_context"
    )
    assert describe_unknown_tool("x", []) == "Unknown tool 'x'. Available tools: none"
