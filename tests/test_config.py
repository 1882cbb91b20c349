"""Provider configuration: required settings, unknown providers, Gemini and LLM_BASE_URL, the status line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_app.llm_config import (
    LLMConfig,
    LLMConfigurationError,
    MissingConfigurationError,
    UnknownProviderError,
    llm_status,
    load_llm_config,
)
from agent_app.providers import create_adapter, get_adapter
from agent_app.providers.gemini import GeminiAdapter
from agent_app.settings import load_settings
from fake_llm import CANARY_API_KEY, FakeLLMServer
from tests.chat_support import post_chat

ROOT = Path(__file__).resolve().parent.parent
BODY = json.dumps({"messages": [{"role": "user", "content": "Hello"}]}).encode()


def test_missing_required_configuration(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.delenv("LLM_API_KEY")
    result = post_chat(BODY)
    assert result.status == 502
    assert result.body == {"error": "Missing LLM configuration: LLM_API_KEY"}
    assert openai_llm.requests == []


def test_every_missing_setting_is_named(llm_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingConfigurationError) as caught:
        load_llm_config(load_settings())
    assert caught.value.missing == ["LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY"]
    llm_env.setenv("LLM_API_KEY", "   ")  # blank counts as unset
    with pytest.raises(MissingConfigurationError, match="LLM_API_KEY"):
        load_llm_config(load_settings())


def test_unknown_provider(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_PROVIDER", "unknown-provider")
    with pytest.raises(UnknownProviderError, match=r"^Unknown LLM provider: unknown-provider$"):
        create_adapter(load_llm_config(load_settings()))
    with pytest.raises(UnknownProviderError):
        get_adapter(load_llm_config(load_settings()))
    result = post_chat(BODY)
    assert (result.status, result.body) == (502, {"error": "Unknown LLM provider: unknown-provider"})


def test_gemini_config_ignores_base_url(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    config = load_llm_config(load_settings())
    assert config.base_url is None
    adapter = get_adapter(config)
    assert isinstance(adapter, GeminiAdapter)
    result = post_chat(BODY)
    assert result.status == 200, result.body
    assert gemini_llm.gemini.last.model == "fake-model"
    assert not gemini_llm.chat.requests


def test_openai_compatible_uses_base_url(openai_llm: FakeLLMServer) -> None:
    assert load_llm_config(load_settings()).base_url == openai_llm.openai_base_url


def test_timeout_and_retries_have_defaults_and_are_validated(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.delenv("LLM_TIMEOUT_SECONDS")
    llm_env.delenv("LLM_MAX_RETRIES")
    config = load_llm_config(load_settings())
    assert (config.timeout_seconds, config.max_retries) == (60.0, 2)
    for name, value in [("LLM_TIMEOUT_SECONDS", "soon"), ("LLM_TIMEOUT_SECONDS", "0"), ("LLM_MAX_RETRIES", "-1")]:
        llm_env.setenv(name, value)
        with pytest.raises(LLMConfigurationError, match=name) as caught:
            load_llm_config(load_settings())
        assert value not in str(caught.value)
        result = post_chat(BODY)
        assert result.status == 502 and name in result.body["error"]
        llm_env.delenv(name)


def test_the_key_is_not_in_the_config_repr_or_status(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    config = load_llm_config(load_settings())
    assert CANARY_API_KEY not in repr(config)
    status = llm_status(load_settings())
    assert status.configured and status.provider == "openai-compatible" and status.model == "fake-model"
    assert status.summary == "openai-compatible · fake-model · configured"
    assert CANARY_API_KEY not in repr(status)
    assert isinstance(config, LLMConfig)


def test_status_names_missing_settings_and_unknown_providers(llm_env: pytest.MonkeyPatch) -> None:
    status = llm_status(load_settings())
    assert not status.configured and status.missing == ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY")
    assert "LLM_API_KEY" in status.summary
    llm_env.setenv("LLM_PROVIDER", "claude-direct")
    llm_env.setenv("LLM_MODEL", "m")
    llm_env.setenv("LLM_API_KEY", CANARY_API_KEY)
    status = llm_status(load_settings())
    assert not status.configured and status.problem == "Unknown LLM provider: claude-direct"
    assert CANARY_API_KEY not in status.summary


def test_status_names_an_invalid_timeout_or_retry_setting_before_any_send(
    openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    """The page must not say "configured" for settings that fail at the first message."""
    cases = [
        ("LLM_MAX_RETRIES", "several"),
        ("LLM_MAX_RETRIES", "-3"),
        ("LLM_TIMEOUT_SECONDS", "soon"),
        ("LLM_TIMEOUT_SECONDS", "1e300"),  # finite, but overflows a socket timeout at the first send
        ("LLM_RETRY_BACKOFF_SECONDS", "nan"),
        ("LLM_CONTEXT_TOKENS", "16k"),
        ("LLM_CONTEXT_TOKENS", "0"),
        ("LLM_MAX_OUTPUT_TOKENS", "-5"),
    ]
    for name, value in cases:
        llm_env.setenv(name, value)
        status = llm_status(load_settings())
        assert not status.configured and status.problem is not None and name in status.problem, (name, value)
        assert value not in status.summary and CANARY_API_KEY not in status.summary
        assert [name in problem for problem in status.invalid] == [True]
        result = post_chat(BODY)
        assert result.status == 502 and name in result.body["error"]
        llm_env.setenv(name, "1")
    assert llm_status(load_settings()).configured and not openai_llm.requests


def test_status_names_invalid_settings_next_to_missing_ones(llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_PROVIDER", "gemini")
    llm_env.setenv("LLM_MAX_RETRIES", "lots")
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "-1")
    status = llm_status(load_settings())
    assert not status.configured and status.missing == ("LLM_MODEL", "LLM_API_KEY")
    assert [problem.split()[1] for problem in status.invalid] == ["LLM_TIMEOUT_SECONDS", "LLM_MAX_RETRIES"]
    assert status.problem is not None
    assert all(name in status.problem for name in ("LLM_API_KEY", "LLM_MAX_RETRIES", "LLM_TIMEOUT_SECONDS"))
    assert "lots" not in status.problem


def test_a_fractional_or_boolean_retry_count_in_secrets_is_invalid(tmp_path: Path) -> None:
    """TOML gives floats and booleans, which ``int()`` would silently turn into 2 or 1 retries."""
    (tmp_path / ".streamlit").mkdir()
    code = (
        "from agent_app.llm_config import llm_status\nfrom agent_app.settings import load_settings\n"
        "s = llm_status(load_settings())\nprint(s.configured, '|'.join(s.invalid))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for value, configured in [("2.5", "False"), ("true", "False"), ("2.0", "True"), ("3", "True")]:
        (tmp_path / ".streamlit" / "secrets.toml").write_text(
            f'LLM_PROVIDER = "gemini"\nLLM_MODEL = "m"\nLLM_API_KEY = "k"\nLLM_MAX_RETRIES = {value}\n'
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        shown, _, invalid = done.stdout.strip().partition(" ")
        assert shown == configured, (value, done.stdout)
        assert ("LLM_MAX_RETRIES" in invalid) == (configured == "False")


def test_secrets_file_wins_over_environment(tmp_path: Path) -> None:
    """In a fresh process whose working directory holds ``.streamlit/secrets.toml``."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        'LLM_PROVIDER = "gemini"\nLLM_MODEL = "from-secrets"\nLLM_API_KEY = "secret-key"\nLLM_MAX_RETRIES = 4\n'
    )
    code = (
        "from agent_app.llm_config import load_llm_config\nfrom agent_app.settings import load_settings\n"
        "c = load_llm_config(load_settings())\n"
        "print(c.provider, c.model, c.api_key == 'secret-key', c.max_retries, c.base_url)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LLM_PROVIDER": "openai-compatible",
        "LLM_MODEL": "from-env",
        "LLM_API_KEY": "env-key",
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["gemini", "from-secrets", "True", "4", "None"]


def test_context_window_settings_are_read(openai_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    assert (load_llm_config(load_settings()).context_tokens, load_llm_config(load_settings()).max_output_tokens) == (
        None,
        None,
    )
    llm_env.setenv("LLM_CONTEXT_TOKENS", "16000")
    llm_env.setenv("LLM_MAX_OUTPUT_TOKENS", "1000")
    assert (load_llm_config(load_settings()).context_tokens, load_llm_config(load_settings()).max_output_tokens) == (
        16_000,
        1_000,
    )
