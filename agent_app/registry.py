"""Registries of named definitions, and the tool registry the orchestrator and route share."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from agent_app.types import ToolDefinition, ToolSchema

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class DuplicateDefinitionError(ValueError):
    """Two definitions claimed the same key: a configuration mistake worth stopping for."""


class DefinitionRegistry(Generic[K, V]):
    """An insertion-ordered map of definitions in which a key can be registered only once.

    Silent replacement would let one plugin shadow another without anyone noticing.
    """

    def __init__(self) -> None:
        self._items: dict[K, V] = {}

    def register(self, key: K, definition: V) -> None:
        """Add ``definition`` under ``key``; raise :class:`DuplicateDefinitionError` if taken."""
        if key in self._items:
            raise DuplicateDefinitionError(f"{key!r} is already registered")
        self._items[key] = definition

    def get(self, key: K) -> V | None:
        """The definition under ``key``, or ``None``."""
        return self._items.get(key)

    def has(self, key: K) -> bool:
        """Whether ``key`` is registered."""
        return key in self._items

    def get_all(self) -> list[V]:
        """Every definition, in registration order."""
        return list(self._items.values())

    def keys(self) -> list[K]:
        """Every key, in registration order."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


class ToolRegistry(DefinitionRegistry[str, ToolDefinition[Any]]):
    """The tools the assistant may call, keyed by tool name."""

    def register(self, key: str, definition: ToolDefinition[Any]) -> None:
        """Add ``definition`` under ``key``, which must be its own name.

        The model calls a tool by the name in its exported schema and the orchestrator looks the
        call up by key: a tool filed under another name could be offered but never found.
        """
        if key != definition.name:
            raise ValueError(f"Tool {definition.name!r} cannot be registered under another name ({key!r})")
        super().register(key, definition)

    def register_tool(self, tool: ToolDefinition[Any]) -> None:
        """Register ``tool`` under its own name."""
        self.register(tool.name, tool)

    def names(self) -> list[str]:
        """The registered tool names, in registration order."""
        return self.keys()

    def to_tool_schemas(self) -> list[ToolSchema]:
        """Every tool's provider-agnostic schema; adapters convert these to their wire format."""
        return [tool.to_schema() for tool in self.get_all()]
