"""Tool discovery through pluggy: the project's hook spec, the built-in plugin modules (imported by name,
as simonw/llm does with its ``DEFAULT_PLUGINS``) and installed packages (entry-point group
``agent_app.tools``), filtered by the enabled-tools setting.

A plugin is any module or object with a function ``agent_app_tools()`` marked with
:data:`hookimpl` that returns :class:`~agent_app.types.ToolDefinition` objects. Plugins may offer
tools that stay disabled: only names in ``AGENT_ENABLED_TOOLS`` (default ``["transcribe_video"]``)
reach the registry. Every mistake (a plugin that fails to import, an enabled name nobody provides,
two plugins offering one name) stops start-up with a message naming it, because a silently missing
tool is worse than a loud one.

The registry the app uses is built once per enabled-tools setting, under a lock
(:func:`enabled_tool_registry`): concurrent first requests all wait for the one complete result.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pluggy

from agent_app.registry import ToolRegistry
from agent_app.types import ToolDefinition

PROJECT_NAME = "agent_app"
ENTRY_POINT_GROUP = "agent_app.tools"
BUILTIN_PLUGINS: tuple[str, ...] = ("plugins.transcribe_video", "plugins.echo_context")
"""The project's own tool plugins, by module name: registered through the same hook as installed ones."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class ToolConfigurationError(RuntimeError):
    """The tool set cannot be built as configured; the message names what is wrong."""


class ToolHookSpec:
    """The hooks a tool plugin may implement."""

    @hookspec
    def agent_app_tools(self) -> Sequence[ToolDefinition[Any]]:  # type: ignore[empty-body]
        """Return the tools this plugin provides (enabled or not)."""


def _register(manager: pluggy.PluginManager, load: Callable[[], object], name: str, label: str) -> None:
    """Load a plugin and register it; a failure of either (an import error, a hook implementation pluggy
    rejects for its signature) names ``label``."""
    try:
        manager.register(load(), name=name)
    except Exception as exc:
        raise ToolConfigurationError(f"Tool plugin {label} failed to load: {type(exc).__name__}: {exc}") from exc


def _load_entry_points(manager: pluggy.PluginManager) -> None:
    """Register every installed package's ``agent_app.tools`` entry point.

    pluggy's ``load_setuptools_entrypoints`` does the same, but its failure does not say which
    package broke; this loop names the entry point, its target and its distribution.
    """
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        plugin_name = f"entry-point:{entry_point.name}"
        if manager.has_plugin(plugin_name) or manager.is_blocked(plugin_name):
            continue
        distribution = entry_point.dist.name if entry_point.dist is not None else "unknown package"
        label = f"{entry_point.name} = {entry_point.value} (entry point of {distribution})"
        _register(manager, entry_point.load, plugin_name, label)


def create_plugin_manager(
    modules: Sequence[str] = BUILTIN_PLUGINS, *, entry_points: bool = True
) -> pluggy.PluginManager:
    """A plugin manager with the plugin ``modules`` (imported by name) and, optionally, installed packages."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(ToolHookSpec)
    for module_name in modules:
        # Python's import lock makes a second thread importing the same module wait for the first one's
        # complete module, never see it half executed.
        _register(manager, functools.partial(importlib.import_module, module_name), module_name, module_name)
    if entry_points:
        _load_entry_points(manager)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        raise ToolConfigurationError(f"Tool plugin {exc.plugin!r} failed to load: {exc}") from exc
    return manager


def available_tools(manager: pluggy.PluginManager) -> dict[str, ToolDefinition[Any]]:
    """Every tool any plugin offers, by name; two plugins offering one name is an error."""
    tools: dict[str, ToolDefinition[Any]] = {}
    owners: dict[str, str] = {}
    for impl in manager.hook.agent_app_tools.get_hookimpls():
        plugin_name = manager.get_name(impl.plugin) or repr(impl.plugin)
        try:
            offered = impl.function()
        except Exception as exc:
            raise ToolConfigurationError(
                f"Tool plugin {plugin_name} failed to list its tools: {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(offered, str | bytes | Mapping) or not isinstance(offered, Iterable):
            raise ToolConfigurationError(f"Tool plugin {plugin_name} returned {offered!r}, not a list of tools")
        for tool in offered:
            if not isinstance(tool, ToolDefinition):
                raise ToolConfigurationError(f"Tool plugin {plugin_name} returned {tool!r}, not a ToolDefinition")
            if tool.name in tools:
                raise ToolConfigurationError(
                    f"Tool {tool.name!r} is provided by more than one plugin: {owners[tool.name]} and {plugin_name}"
                )
            tools[tool.name] = tool
            owners[tool.name] = plugin_name
    return tools


def build_tool_registry(enabled: Iterable[str], manager: pluggy.PluginManager | None = None) -> ToolRegistry:
    """The registry of the ``enabled`` tools (the ``AGENT_ENABLED_TOOLS`` setting), in the order they are
    enabled."""
    names = list(enabled)
    offered = available_tools(manager if manager is not None else create_plugin_manager())
    registry = ToolRegistry()
    for name in names:
        tool = offered.get(name)
        if tool is None:
            known = ", ".join(sorted(offered)) or "none"
            raise ToolConfigurationError(f"Enabled tool {name!r} is not provided by any plugin (available: {known})")
        if not registry.has(name):
            registry.register_tool(tool)
    return registry


_registries: dict[tuple[str, ...], ToolRegistry] = {}
_registries_lock = threading.Lock()


def enabled_tool_registry(enabled: Iterable[str]) -> ToolRegistry:
    """The registry of the ``enabled`` tools (``Settings.enabled_tools``), shared by the route and every
    page session.

    Built once per setting value while holding a lock, so concurrent first callers wait for the one
    complete registry; a failure is not kept (each caller gets the error naming the plugin, and a fixed
    setting applies without a restart).
    """
    names = tuple(enabled)
    with _registries_lock:
        registry = _registries.get(names)
        if registry is None:
            registry = _registries[names] = build_tool_registry(names)
        return registry


def usable_tool_registry(enabled: Iterable[str]) -> tuple[ToolRegistry, str | None]:
    """:func:`enabled_tool_registry`, or an empty registry and why (the page says why; the model still answers)."""
    try:
        return enabled_tool_registry(enabled), None
    except ToolConfigurationError as exc:
        return ToolRegistry(), str(exc)
