"""Test tools: argument models built from the spec's parameter lists, and tool bodies written over plain
dicts (what arrived after validation, camelCase, only the keys given)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import create_model
from pydantic.alias_generators import to_snake

from agent_app.tool_args import JSON_TYPES, ToolArgs
from agent_app.types import ToolDefinition, ToolEnvironment, ToolParameter

DictBody = Callable[[dict[str, Any], ToolEnvironment], Any]


def args_model(*parameters: ToolParameter) -> type[ToolArgs]:
    """An argument model declaring ``parameters`` (required ones without a default)."""
    fields: dict[str, Any] = {
        to_snake(p.key): (JSON_TYPES[p.type].python, ...) if p.required else (JSON_TYPES[p.type].python | None, None)
        for p in parameters
    }
    return create_model("TestArgs", __base__=ToolArgs, **fields)


def dict_body(execute: DictBody) -> Callable[[ToolArgs, ToolEnvironment], Any]:
    """A tool body receiving the validated arguments as the dict a model sent, minus what validation dropped."""
    return lambda args, env: execute(args.model_dump(by_alias=True, exclude_unset=True), env)


def make_tool(name: str, execute: DictBody, *parameters: ToolParameter) -> ToolDefinition[ToolArgs]:
    """A tool named ``name`` declaring ``parameters`` whose body takes a dict."""
    return ToolDefinition(
        name=name, description=f"test tool {name}", arguments=args_model(*parameters), execute=dict_body(execute)
    )
