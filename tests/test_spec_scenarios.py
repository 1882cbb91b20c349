"""Every scenario of the spec (``docs/agent-session-shell.md``) has a test named after it, somewhere in
``tests/``, so a reader can go from a scenario to the test that shows it.

The name of a scenario's test: ``test_`` and the title in lower case, quotes and apostrophes dropped, every
other run of characters that are not letters or digits (spaces, hyphens, en and em dashes, commas, slashes)
one underscore: "Error during tool execution — per-tool recovery" is
``test_error_during_tool_execution_per_tool_recovery``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "agent-session-shell.md"
_SCENARIO = re.compile(r"^#### Scenario:\s*(.+?)\s*$", re.MULTILINE)
_QUOTES = re.compile(r"[\"'`‘’“”]")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def scenario_test_name(title: str) -> str:
    """The name the test of the scenario called ``title`` must have."""
    words = _SEPARATORS.sub("_", _QUOTES.sub("", title.lower())).strip("_")
    return f"test_{words}"


def scenario_titles(spec: str) -> list[str]:
    return _SCENARIO.findall(spec)


def defined_test_names() -> set[str]:
    """The names of every test function in ``tests/`` (module level or in a class)."""
    names: set[str] = set()
    for path in ROOT.joinpath("tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def test_a_title_becomes_its_test_name() -> None:
    assert scenario_test_name("Tool call then final answer") == "test_tool_call_then_final_answer"
    assert scenario_test_name("Adapter selected by config — OpenAI-compatible") == (
        "test_adapter_selected_by_config_openai_compatible"
    )
    assert scenario_test_name("Invalid request returns 400") == "test_invalid_request_returns_400"
    assert scenario_test_name("The user's “Stop” – at once, mid-loop") == "test_the_users_stop_at_once_mid_loop"


def test_scenarios_are_read_from_the_spec() -> None:
    titles = scenario_titles(SPEC.read_text(encoding="utf-8"))
    assert "Tool call then final answer" in titles and "Types are importable everywhere" in titles
    assert len(titles) == len(set(titles)), "two scenarios share a title"


def test_every_spec_scenario_has_a_test_named_after_it() -> None:
    names = defined_test_names()
    missing = [
        f"{title!r} needs {scenario_test_name(title)}"
        for title in scenario_titles(SPEC.read_text(encoding="utf-8"))
        if scenario_test_name(title) not in names
    ]
    assert not missing, "\n".join(missing)
