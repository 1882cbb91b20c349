"""Tool-argument validation by each tool's argument model (the orchestrator's use is in test_orchestrator)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent_app.tool_args import ParameterType, ToolArgs
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import ToolDefinition, ToolEnvironment, ToolParameter
from agent_app.validation import ToolArgumentsError, describe_unknown_tool, parse_tool_args
from tests.tool_support import make_tool


def tool_with(*parameters: ToolParameter) -> ToolDefinition[ToolArgs]:
    def execute(args: dict[str, Any], env: ToolEnvironment) -> None:
        raise AssertionError("validation never runs the tool")

    return make_tool("t", execute, *parameters)


def validate_tool_args(tool: ToolDefinition[Any], args: Any) -> str | None:
    """``None`` when ``args`` suit ``tool``, else the error text the model would get."""
    try:
        parse_tool_args(tool, args)
    except ToolArgumentsError as exc:
        return str(exc)
    return None


def normalize_tool_args(tool: ToolDefinition[Any], args: Any) -> dict[str, Any]:
    """What the tool receives, as the dict a model would have sent."""
    arguments: ToolArgs = parse_tool_args(tool, args)
    return arguments.model_dump(by_alias=True, exclude_unset=True)


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


def test_undeclared_arguments_are_ignored() -> None:
    tool = tool_with(ToolParameter(key="language", type="string"))
    assert validate_tool_args(tool, {"mood": 3}) is None
    assert normalize_tool_args(tool, {"mood": 3, "language": "en"}) == {"language": "en"}


def test_long_values_are_abbreviated_in_the_error() -> None:
    error = validate_tool_args(tool_with(required("n", "integer")), {"n": "x" * 500})
    assert error is not None and len(error) < 150 and error.endswith("...")


def test_arguments_that_are_not_an_object() -> None:
    error = validate_tool_args(tool_with(), ["a"])
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


class ClipArgs(ToolArgs):
    """A tool's argument model as a plugin writes it."""

    asset_id: str = Field(description="Which clip")
    count: int = Field(2, ge=1)
    ratio: float | None = Field(None, description="How much")
    tags: list[str] = Field(default_factory=list)
    options: dict[str, Any] | None = None
    loud: bool = False


def test_parameters_are_generated_from_the_argument_model() -> None:
    tool = ToolDefinition(name="clip", description="d", arguments=ClipArgs, execute=lambda args, env: None)
    assert [parameter.to_wire() for parameter in tool.parameters] == [
        {"key": "assetId", "type": "string", "required": True, "description": "Which clip"},
        {"key": "count", "type": "integer", "required": False, "description": ""},
        {"key": "ratio", "type": "number", "required": False, "description": "How much"},
        {"key": "tags", "type": "array", "required": False, "description": ""},
        {"key": "options", "type": "object", "required": False, "description": ""},
        {"key": "loud", "type": "boolean", "required": False, "description": ""},
    ]
    parsed = parse_tool_args(tool, {"asset_id": "a1", "count": 3.0, "ratio": None, "tags": ["x"]})
    assert parsed == ClipArgs(asset_id="a1", count=3, tags=["x"])
    assert validate_tool_args(tool, {"assetId": "a1", "count": 0, "tags": [1]}) == (
        "Invalid arguments for clip: argument 'count': Input should be greater than or equal to 1 (got 0); "
        "argument 'tags[0]': Input should be a valid string (got 1)"
    )


class Nested(BaseModel):
    x: int


class UnionArgs(ToolArgs):
    either: int | str


class NestedArgs(ToolArgs):
    inner: Nested


def test_an_argument_without_one_json_type_is_refused_when_the_tool_is_defined() -> None:
    with pytest.raises(TypeError, match="'either' must have one JSON type"):
        ToolDefinition(name="u", description="d", arguments=UnionArgs, execute=lambda args, env: None)
    nested = ToolDefinition(name="n", description="d", arguments=NestedArgs, execute=lambda args, env: None)
    assert nested.parameters[0].type == "object"
