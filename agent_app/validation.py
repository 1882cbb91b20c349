"""Checks of what crosses into and out of a tool: a call's arguments, validated once by the tool's own
argument model (:class:`~agent_app.types.ToolArgs`), and the depth of data kept in a conversation.

The argument errors are written for the model as much as for the user: they go back to the LLM inside a
``ToolResult.error`` so it can correct the call, hence they name the argument, the expected type and what
arrived, and report every problem at once (joined with ``"; "``) so one retry can fix them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agent_app.tool_args import JSON_TYPES, ToolArgs, ToolParameter
from agent_app.types import ToolDefinition

ArgsT = TypeVar("ArgsT", bound=ToolArgs)

_WRONG_TYPE_ERRORS = frozenset({"finite_number", "int_from_float"})
"""pydantic error types that mean "not of the declared type" besides the ``*_type`` family."""


class ToolArgumentsError(ValueError):
    """A call's arguments do not suit the tool; the message names every bad argument."""


def json_type_name(value: object) -> str:
    """The JSON name of ``value``'s type, as the model would call it."""
    if value is None:
        return "null"
    return next((name for name, kind in JSON_TYPES.items() if isinstance(value, kind.python)), type(value).__name__)


def field_path(location: Iterable[int | str]) -> str:
    """How every error of ours names a place in JSON data, from a pydantic error's ``loc`` or the keys and
    indexes walked: keys joined by dots, indexes in brackets (``messages[3].toolCalls[0].id``)."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _preview(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _problem(error: ErrorDetails, declared: Mapping[str, ToolParameter]) -> str:
    """One pydantic error as a sentence naming the argument."""
    location = tuple(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    if not location:  # a check across arguments (the model's own validator)
        return message
    parameter = declared.get(str(location[0])) if len(location) == 1 else None
    value = error["input"]
    if parameter is not None:
        if error["type"] == "missing" or value is None:
            state = "is missing" if error["type"] == "missing" else "is null"
            return f"required argument '{parameter.key}' ({parameter.type}) {state}"
        if error["type"].endswith("_type") or error["type"] in _WRONG_TYPE_ERRORS:
            return (
                f"argument '{parameter.key}' must be {JSON_TYPES[parameter.type].phrase}, "
                f"got {json_type_name(value)} {_preview(value)}"
            )
    if error["type"] == "value_error":  # the tool's own check: its message says what was wrong
        return f"argument '{field_path(location)}': {message}"
    return f"argument '{field_path(location)}': {message} (got {_preview(value)})"


def parse_tool_args(tool: ToolDefinition[ArgsT], args: object) -> ArgsT:
    """``args`` as the tool's argument model, or :class:`ToolArgumentsError` saying what is wrong."""
    if not isinstance(args, Mapping):
        raise ToolArgumentsError(f"Arguments of {tool.name} must be an object, got {json_type_name(args)}")
    try:
        return tool.arguments.model_validate(args)
    except ValidationError as exc:
        declared = {parameter.key: parameter for parameter in tool.parameters}
        problems = [_problem(error, declared) for error in exc.errors()]
        raise ToolArgumentsError(f"Invalid arguments for {tool.name}: " + "; ".join(problems)) from None


def describe_unknown_tool(name: str, available: Iterable[str]) -> str:
    """The error for a call of a tool that is not registered, listing the tools that are."""
    names = list(available)
    listing = ", ".join(names) if names else "none"
    return f"Unknown tool '{name}'. Available tools: {listing}"


MAX_JSON_DEPTH = 64
"""Deepest nesting of a tool's arguments or result that is kept. The history goes back through the route on
every request, and its JSON parser stops at about 200 levels: one deeper value stored in a conversation
would make every later request of it fail. No real tool argument or result comes near 64."""


def json_depth_exceeds(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` (plain JSON data) nests containers more than ``limit`` levels deep. Iterative, so a
    pathological value cannot exhaust the stack while being measured."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
