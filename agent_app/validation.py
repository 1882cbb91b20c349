"""Checks of a tool call's arguments against the tool's declared parameters, before it runs.

The messages are written for the model as much as for the user: they go back to the LLM inside a
``ToolResult.error`` so it can correct the call, hence they name the argument, the expected type
and what arrived.

Decisions the spec leaves open:

* ``integer`` accepts a float with no fractional part (``3.0``): JSON does not distinguish the two
  and Gemini hands every number over as a double. :func:`normalize_tool_args` turns it into ``3``.
* ``null`` for an *optional* argument means "not given" (OpenAI's strict mode makes models send
  ``null`` for every optional parameter); :func:`normalize_tool_args` drops it. ``null`` for a
  *required* argument is missing.
* ``true``/``false`` are not numbers or integers, although ``bool`` is an ``int`` in Python.
* Arguments the tool does not declare are passed through unchecked: a tool reads what it declares
  and ignores the rest, and failing a call over a harmless extra key would only cost a round trip.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from agent_app.types import ParameterType, ToolDefinition

_TYPE_NAMES: dict[ParameterType, str] = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}


def json_type_name(value: object) -> str:
    """The JSON name of ``value``'s type, as the model would call it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def matches_type(value: object, expected: ParameterType) -> bool:
    """Whether ``value`` is of the declared JSON Schema type (see the module's decisions)."""
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if expected == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if expected == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if expected == "object":
        return isinstance(value, Mapping)
    return isinstance(value, list | tuple)


def _preview(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_tool_args(tool: ToolDefinition, args: Mapping[str, Any]) -> str | None:
    """``None`` when ``args`` suit ``tool``; otherwise why not, naming the argument.

    Every problem is reported at once (joined with ``"; "``) so the model can fix them in one retry.
    """
    if not isinstance(args, Mapping):
        return f"Arguments of {tool.name} must be an object, got {json_type_name(args)}"
    problems: list[str] = []
    for parameter in tool.parameters:
        value = args.get(parameter.key)
        if value is None:
            if parameter.required:
                state = "is null" if parameter.key in args else "is missing"
                problems.append(f"required argument '{parameter.key}' ({parameter.type}) {state}")
            continue
        if not matches_type(value, parameter.type):
            problems.append(
                f"argument '{parameter.key}' must be {_TYPE_NAMES[parameter.type]}, "
                f"got {json_type_name(value)} {_preview(value)}"
            )
    if not problems:
        return None
    return f"Invalid arguments for {tool.name}: " + "; ".join(problems)


def normalize_tool_args(tool: ToolDefinition, args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a tool receives, for ``args`` that passed :func:`validate_tool_args`:
    optional ``null`` values dropped and integral floats of ``integer`` parameters made ``int``."""
    declared = {parameter.key: parameter.type for parameter in tool.parameters}
    normalized: dict[str, Any] = {}
    for key, value in args.items():
        if value is None and key in declared:
            continue
        integral_float = declared.get(key) == "integer" and isinstance(value, float)
        normalized[key] = int(value) if integral_float else value
    return normalized


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
