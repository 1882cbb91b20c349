"""The tool registry built from plugins and settings, and plugin discovery's errors."""

from __future__ import annotations

import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent_app.registry import DefinitionRegistry, DuplicateDefinitionError, ToolRegistry
from agent_app.settings import load_settings
from agent_app.tool_args import ToolArgs
from agent_app.tool_plugins import (
    BUILTIN_PLUGINS,
    ENTRY_POINT_GROUP,
    ToolConfigurationError,
    build_tool_registry,
    create_plugin_manager,
    enabled_tool_registry,
)
from agent_app.types import ToolDefinition, ToolEnvironment


def test_default_settings_register_exactly_transcribe_video(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_ENABLED_TOOLS", raising=False)
    registry = build_tool_registry(load_settings().enabled_tools)
    assert registry.names() == ["transcribe_video"]
    assert not registry.has("echo_context")


def test_enabling_echo_context_adds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "transcribe_video,echo_context")
    assert build_tool_registry(load_settings().enabled_tools).names() == ["transcribe_video", "echo_context"]


def test_unknown_enabled_tool_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "transcribe_video,summon_dragon")
    with pytest.raises(ToolConfigurationError, match="summon_dragon"):
        build_tool_registry(load_settings().enabled_tools)


def test_registering_a_key_twice_is_an_error() -> None:
    registry: DefinitionRegistry[str, int] = DefinitionRegistry()
    registry.register("a", 1)
    with pytest.raises(DuplicateDefinitionError):
        registry.register("a", 2)
    assert registry.get("a") == 1


def test_schema_export_produces_internal_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_ENABLED_TOOLS", raising=False)
    schemas = build_tool_registry(load_settings().enabled_tools).to_tool_schemas()
    assert len(schemas) == 1
    wire = schemas[0].to_wire()
    assert wire["name"] == "transcribe_video"
    assert wire["description"]
    asset_id = next(p for p in wire["parameters"] if p["key"] == "assetId")
    assert asset_id == {"key": "assetId", "type": "string", "required": False, "description": asset_id["description"]}
    assert "execute" not in wire


def test_registry_basics_keep_registration_order() -> None:
    registry: DefinitionRegistry[str, int] = DefinitionRegistry()
    registry.register("b", 2)
    registry.register("a", 1)
    assert registry.has("a") and not registry.has("c")
    assert registry.get("c") is None
    assert registry.get_all() == [2, 1]
    assert registry.keys() == ["b", "a"]
    assert len(registry) == 2


# -- plugin discovery ------------------------------------------------------------------------------

TOOL_PLUGIN = """
from agent_app.tool_plugins import hookimpl
from agent_app.tool_args import ToolArgs
from agent_app.types import ToolDefinition


def run(args, env):
    return {{"from": {label!r}}}


@hookimpl
def agent_app_tools():
    return [ToolDefinition(name={name!r}, description="test", arguments=ToolArgs, execute=run)]
"""


@pytest.fixture
def write_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], str]]:
    """Write plugin modules into a fresh package on ``sys.path``; each call returns the module's name."""
    package = f"agent_app_test_plugins_{uuid.uuid4().hex}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(stem: str, source: str) -> str:
        (tmp_path / package / f"{stem}.py").write_text(textwrap.dedent(source))
        return f"{package}.{stem}"

    yield write
    for name in [name for name in sys.modules if name.startswith(package)]:
        del sys.modules[name]


Writer = Callable[[str, str], str]


def registry_from(modules: list[str], *enabled: str) -> list[str]:
    manager = create_plugin_manager(modules, entry_points=False)
    return build_tool_registry(list(enabled), manager=manager).names()


def test_plugin_that_fails_to_load_is_named_in_the_error(write_plugin: Writer) -> None:
    good = write_plugin("good", TOOL_PLUGIN.format(name="good_tool", label="good"))
    broken = write_plugin("broken_plugin", "import no_such_module_anywhere\n")
    with pytest.raises(ToolConfigurationError) as info:
        registry_from([good, broken], "good_tool")
    message = str(info.value)
    assert f"{broken} failed to load" in message
    assert "ModuleNotFoundError" in message and "no_such_module_anywhere" in message


def test_plugin_whose_hook_fails_is_named(write_plugin: Writer) -> None:
    raiser = write_plugin(
        "raiser",
        """
        from agent_app.tool_plugins import hookimpl

        @hookimpl
        def agent_app_tools():
            raise RuntimeError("no GPU")
    """,
    )
    with pytest.raises(ToolConfigurationError, match=rf"{raiser} failed to list its tools: RuntimeError: no GPU"):
        registry_from([raiser])


def test_plugin_with_a_misspelled_hook_is_named(write_plugin: Writer) -> None:
    typo = write_plugin(
        "typo",
        """
        from agent_app.tool_plugins import hookimpl

        @hookimpl
        def agent_app_tool():
            return []
    """,
    )
    with pytest.raises(ToolConfigurationError, match="unknown hook 'agent_app_tool'"):
        registry_from([typo])


@pytest.mark.parametrize(
    ("returned", "complaint"), [("'echo'", "not a list of tools"), ("[42]", "42, not a ToolDefinition")]
)
def test_plugin_returning_something_else_is_named(write_plugin: Writer, returned: str, complaint: str) -> None:
    odd = write_plugin(
        "odd",
        f"""
        from agent_app.tool_plugins import hookimpl

        @hookimpl
        def agent_app_tools():
            return {returned}
    """,
    )
    with pytest.raises(ToolConfigurationError, match=f"{odd} returned .*{complaint}"):
        registry_from([odd])


def test_two_plugins_offering_one_tool_are_both_named(write_plugin: Writer) -> None:
    one = write_plugin("one", TOOL_PLUGIN.format(name="clash", label="one"))
    two = write_plugin("two", TOOL_PLUGIN.format(name="clash", label="two"))
    expected = f"'clash' is provided by more than one plugin: {one} and {two}"
    with pytest.raises(ToolConfigurationError, match=expected):
        registry_from([one, two], "clash")


def test_a_plugin_module_that_does_not_exist_is_named() -> None:
    with pytest.raises(ToolConfigurationError, match=r"plugins\.no_such_tool failed to load: ModuleNotFoundError"):
        registry_from(["plugins.no_such_tool"])


def test_built_in_tools_come_from_their_modules_through_the_hook() -> None:
    manager = create_plugin_manager(entry_points=False)
    assert sorted(str(manager.get_name(plugin)) for plugin in manager.get_plugins()) == sorted(BUILTIN_PLUGINS)
    assert registry_from(list(BUILTIN_PLUGINS), "transcribe_video", "echo_context") == [
        "transcribe_video",
        "echo_context",
    ]


def test_concurrent_callers_share_one_complete_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "echo_context,transcribe_video")
    barrier = threading.Barrier(16)

    def first_call(_: int) -> ToolRegistry:
        barrier.wait()
        return enabled_tool_registry(load_settings().enabled_tools)

    with ThreadPoolExecutor(16) as pool:
        registries = list(pool.map(first_call, range(16)))
    assert all(registry is registries[0] for registry in registries)
    assert registries[0].names() == ["echo_context", "transcribe_video"]


@pytest.fixture
def installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], str]]:
    """Install (onto sys.path, with real dist-info metadata) a package whose entry point in the
    ``agent_app.tools`` group is a module with the given source; returns the entry point's name."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(entry_name: str, source: str) -> str:
        module = f"agent_app_test_ep_{uuid.uuid4().hex}"
        modules.append(module)
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        dist_info = site / f"{entry_name}_pkg-1.0.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {entry_name}-pkg\nVersion: 1.0\n")
        (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_name} = {module}\n")
        return entry_name

    yield install
    for module in modules:
        sys.modules.pop(module, None)


def test_an_entry_point_plugin_contributes_a_tool(installed_package: Callable[[str, str], str]) -> None:
    installed_package("demo", TOOL_PLUGIN.format(name="demo_tool", label="entry point"))
    manager = create_plugin_manager()
    assert manager.has_plugin("entry-point:demo")
    registry = build_tool_registry(["transcribe_video", "demo_tool"], manager=manager)
    assert registry.names() == ["transcribe_video", "demo_tool"]
    tool = registry.get("demo_tool")
    assert tool is not None and tool.execute(ToolArgs(), ToolEnvironment()) == {"from": "entry point"}
    # Installed but not enabled: offered by the plugin, absent from the registry.
    assert build_tool_registry(["transcribe_video"], manager=manager).names() == ["transcribe_video"]


def test_an_entry_point_that_fails_to_load_is_named(installed_package: Callable[[str, str], str]) -> None:
    installed_package("shaky", "raise ImportError('needs libfoo 2')\n")
    with pytest.raises(ToolConfigurationError) as info:
        create_plugin_manager()
    message = str(info.value)
    assert "shaky = agent_app_test_ep_" in message
    assert "entry point of shaky-pkg" in message
    assert "ImportError: needs libfoo 2" in message


def test_a_tool_is_registered_only_under_its_own_name() -> None:
    tool = ToolDefinition(name="echo", description="d", arguments=ToolArgs, execute=lambda args, env: args)
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="'echo' cannot be registered under another name"):
        registry.register("other", tool)
    registry.register("echo", tool)
    with pytest.raises(DuplicateDefinitionError, match="'echo' is already registered"):
        registry.register_tool(tool)
    assert registry.names() == ["echo"]
    assert registry.to_tool_schemas()[0].name == "echo"
