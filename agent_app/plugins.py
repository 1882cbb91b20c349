"""Tool discovery through pluggy: the project's hook spec, the modules in ``plugins/`` and
installed packages (entry-point group ``agent_app.tools``), filtered by the enabled-tools setting.

A plugin is any module or object with a function ``agent_app_tools()`` marked with
:data:`hookimpl` that returns :class:`~agent_app.types.ToolDefinition` objects. Plugins may offer
tools that stay disabled: only names in ``AGENT_ENABLED_TOOLS`` (default ``["transcribe_video"]``)
reach the registry. Every mistake (a plugin that fails to import, an enabled name nobody provides,
two plugins offering one name) stops start-up with a message naming it, because a silently missing
tool is worse than a loud one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pluggy

from agent_app.registry import ToolRegistry
from agent_app.settings import read_list, read_str
from agent_app.types import ToolDefinition

PROJECT_NAME = "agent_app"
ENTRY_POINT_GROUP = "agent_app.tools"
DEFAULT_ENABLED_TOOLS: tuple[str, ...] = ("transcribe_video",)
DEFAULT_PLUGINS_DIR = Path(__file__).resolve().parent.parent / "plugins"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class ToolConfigurationError(RuntimeError):
    """The tool set cannot be built as configured; the message names what is wrong."""


class ToolHookSpec:
    """The hooks a tool plugin may implement."""

    @hookspec
    def agent_app_tools(self) -> Sequence[ToolDefinition]:  # type: ignore[empty-body]
        """Return the tools this plugin provides (enabled or not)."""


def _load_module_from_path(path: Path) -> ModuleType:
    """Import a plugin file under a private module name, so ``plugins/`` need not be on sys.path.

    The name includes a digest of the file's full path: two directories may both hold an
    ``echo_context.py``, and the second must not silently reuse the first one's module.
    """
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode(), usedforsecurity=False).hexdigest()[:10]
    name = f"{PROJECT_NAME}_plugin_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise ToolConfigurationError(f"Tool plugin {path.name} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ToolConfigurationError(f"Tool plugin {path.name} failed to load: {type(exc).__name__}: {exc}") from exc
    return module


def _register(manager: pluggy.PluginManager, plugin: object, name: str, label: str) -> None:
    """Register ``plugin``; a hook implementation pluggy rejects (wrong signature) names ``label``."""
    try:
        manager.register(plugin, name=name)
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
        try:
            plugin = entry_point.load()
        except Exception as exc:
            raise ToolConfigurationError(f"Tool plugin {label} failed to load: {type(exc).__name__}: {exc}") from exc
        _register(manager, plugin, plugin_name, label)


def create_plugin_manager(plugins_dir: Path | None = None, *, entry_points: bool = True) -> pluggy.PluginManager:
    """A plugin manager with the modules of ``plugins_dir`` and, optionally, installed packages.

    ``plugins_dir`` defaults to the ``AGENT_PLUGINS_DIR`` setting, then the repository's
    ``plugins/``; a directory that does not exist is an error (a typo must not hide every tool).
    """
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(ToolHookSpec)
    directory = plugins_dir if plugins_dir is not None else Path(read_str("AGENT_PLUGINS_DIR") or DEFAULT_PLUGINS_DIR)
    if not directory.is_dir():
        raise ToolConfigurationError(f"Tool plugin directory {directory} does not exist")
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        _register(manager, _load_module_from_path(path), f"file:{path.stem}", path.name)
    if entry_points:
        _load_entry_points(manager)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        raise ToolConfigurationError(f"Tool plugin {exc.plugin!r} failed to load: {exc}") from exc
    return manager


def available_tools(manager: pluggy.PluginManager) -> dict[str, ToolDefinition]:
    """Every tool any plugin offers, by name; two plugins offering one name is an error."""
    tools: dict[str, ToolDefinition] = {}
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
            keys = [parameter.key for parameter in tool.parameters]
            if len(set(keys)) != len(keys):
                raise ToolConfigurationError(f"Tool {tool.name!r} of plugin {plugin_name} declares a parameter twice")
            if tool.name in tools:
                raise ToolConfigurationError(
                    f"Tool {tool.name!r} is provided by more than one plugin: {owners[tool.name]} and {plugin_name}"
                )
            tools[tool.name] = tool
            owners[tool.name] = plugin_name
    return tools


def enabled_tool_names() -> list[str]:
    """The ``AGENT_ENABLED_TOOLS`` setting, default exactly ``["transcribe_video"]``."""
    return read_list("AGENT_ENABLED_TOOLS", list(DEFAULT_ENABLED_TOOLS))


def build_tool_registry(
    enabled: Iterable[str] | None = None,
    manager: pluggy.PluginManager | None = None,
) -> ToolRegistry:
    """The registry of the enabled tools, in the order they are enabled."""
    names = list(enabled) if enabled is not None else enabled_tool_names()
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
