"""The one settings object: read from Streamlit secrets then the environment, validated, documented.

Every value that cannot be used is named (never shown) and leaves only its own setting at the default,
so the parts of the app that do not need it keep working."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent_app.settings import SETTING_NAMES, Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / ".streamlit" / "secrets.toml.example"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No secrets file (a fresh working directory) and none of the settings in the environment."""
    monkeypatch.chdir(tmp_path)
    for name in SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)


def _documented() -> dict[str, object]:
    """Every ``NAME = value`` of the example file, commented out or not, parsed as TOML."""
    lines = [line.removeprefix("# ") for line in EXAMPLE.read_text().splitlines()]
    assignments = [line for line in lines if line.split(" = ")[0] in SETTING_NAMES]
    return tomllib.loads("\n".join(assignments))


def test_the_example_file_documents_every_setting_with_its_default() -> None:
    documented = _documented()
    assert sorted(documented) == sorted(SETTING_NAMES)
    for name, shown in documented.items():
        default = getattr(Settings(), _field_of(name))
        if default is not None:  # settings without a default show an example instead
            as_toml = (
                list(default) if isinstance(default, tuple) else str(default) if isinstance(default, Path) else default
            )
            assert shown == as_toml, name


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LLM_TIMEOUT_SECONDS", "inf"),
        ("LLM_TIMEOUT_SECONDS", "nan"),
        ("LLM_TIMEOUT_SECONDS", "0"),
        ("LLM_TIMEOUT_SECONDS", "1e300"),
        ("LLM_RETRY_BACKOFF_SECONDS", "-infinity"),
        ("LLM_MAX_RETRIES", "1.5"),
        ("LLM_MAX_RETRIES", "-1"),
        ("LLM_CONTEXT_TOKENS", "16k"),
        ("AGENT_MAX_UPLOAD_MB", "0.5"),
        ("AGENT_MAX_UPLOAD_MB", "0"),
        ("AGENT_DB_BUSY_TIMEOUT_MS", "soon"),
        ("AGENT_MAX_BODY_BYTES", "NaN"),
        ("TRANSCRIBE_BACKEND", "whisper-large"),
        ("AGENT_ALLOW_REMOTE_PAGE", "sometimes"),
    ],
)
def test_an_unusable_value_is_named_not_shown_and_the_rest_still_loads(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("LLM_MODEL", "kept-model")
    settings = load_settings()
    [message] = settings.problems_with(*SETTING_NAMES)
    assert message.startswith(f"Setting {name} must be ") and value not in message.removeprefix(f"Setting {name}")
    assert settings.llm_model == "kept-model"  # the usable settings are there
    assert getattr(settings, _field_of(name)) == getattr(Settings(), _field_of(name))  # the default stands in
    with pytest.raises(SettingsError, match=name):
        settings.require(name)
    settings.require("LLM_MODEL")  # asking only for good ones raises nothing


def _field_of(alias: str) -> str:
    return next(name for name, field in Settings.model_fields.items() if field.alias == alias)


def test_values_are_parsed_and_blank_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", " 2.5 ")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("AGENT_ENABLED_TOOLS", "transcribe_video, echo_context ,")
    monkeypatch.setenv("LLM_PROVIDER", "Gemini")
    monkeypatch.setenv("LLM_BASE_URL", "   ")
    settings = load_settings()
    assert settings.problems == ()
    assert (settings.llm_timeout_seconds, settings.llm_max_retries) == (2.5, 0)
    assert settings.enabled_tools == ("transcribe_video", "echo_context")
    assert settings.llm_provider == "gemini" and settings.llm_base_url is None
    assert math.isfinite(settings.llm_retry_backoff_seconds)
    assert settings.allow_remote_page is False  # the page serves this machine only unless told otherwise
    for flag, allowed in (("true", True), ("1", True), ("yes", True), ("false", False), ("0", False)):
        monkeypatch.setenv("AGENT_ALLOW_REMOTE_PAGE", flag)
        assert load_settings().allow_remote_page is allowed


def test_toml_types_from_the_secrets_file_are_checked_too(tmp_path: Path) -> None:
    """In a fresh process (Streamlit keeps a secrets file it has read for the life of the process)."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        'LLM_MAX_RETRIES = true\nAGENT_ENABLED_TOOLS = ["echo_context"]\nLLM_MODEL = 4\nAGENT_MAX_UPLOAD_MB = 2\n'
    )
    code = (
        "import json\nfrom agent_app.settings import load_settings\ns = load_settings()\n"
        "print(json.dumps([s.problems_with('LLM_MAX_RETRIES'), s.enabled_tools, s.llm_model, s.max_upload_bytes]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_MAX_UPLOAD_MB": "3"}  # the secrets file wins
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [
        ["Setting LLM_MAX_RETRIES must be an integer, 0 or more"],
        ["echo_context"],
        "4",
        2 * 1024 * 1024,
    ]


def test_a_secrets_file_written_while_the_process_runs_is_read_by_the_next_load(tmp_path: Path) -> None:
    """A missing secrets file is looked for again on every load (only where to look is remembered), and
    is read once it appears; in a fresh process, as Streamlit keeps what it has parsed."""
    code = (
        "from pathlib import Path\nfrom agent_app.settings import load_settings\n"
        "before = load_settings().llm_model\nPath('.streamlit').mkdir()\n"
        "Path('.streamlit/secrets.toml').write_text('LLM_MODEL = \"from-secrets\"\\n')\n"
        "print(before, load_settings().llm_model)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LLM_MODEL": "from-env"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["from-env", "from-secrets"]


def test_keys_are_not_in_the_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LLM_API_KEY", "TRANSCRIBE_API_KEY", "AGENT_API_TOKEN"):
        monkeypatch.setenv(name, f"secret-{name}")
    settings = load_settings()
    assert "secret-" not in repr(settings) and settings.api_token == "secret-AGENT_API_TOKEN"


ENTRY_POINTS = {"agent_app/ui/page_layout.py", "agent_app/ui/resources.py", "agent_app/routes/chat.py",
                "agent_app/routes/media.py", "agent_app/storage/copy_to_postgres.py",
                "agent_app/worker.py"}  # fmt: skip
"""Where work starts (a page run, a run, a route request, a command): the only readers of the settings, as
``load_settings``'s docstring names them; everything below is handed them."""


def test_settings_are_read_only_where_work_starts() -> None:
    readers = set()
    for path in [*(ROOT / "agent_app").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        if any(getattr(call.func, "id", getattr(call.func, "attr", None)) == "load_settings" for call in calls):
            readers.add(path.relative_to(ROOT).as_posix())
    assert readers == ENTRY_POINTS
    documented = load_settings.__doc__ or ""
    assert all(Path(name).stem in documented for name in ENTRY_POINTS)
