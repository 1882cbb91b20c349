"""Hostile ``LLM_*`` values: each is refused with a 502 naming the setting, before any SDK sees it."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeLLMServer
from tests.chat_support import post_chat

HELLO = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode()


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("LLM_TIMEOUT_SECONDS", "inf"),
        ("LLM_TIMEOUT_SECONDS", "nan"),
        ("LLM_TIMEOUT_SECONDS", "-1"),
        ("LLM_TIMEOUT_SECONDS", "soon"),
        ("LLM_RETRY_BACKOFF_SECONDS", "nan"),
        ("LLM_RETRY_BACKOFF_SECONDS", "inf"),
        ("LLM_MAX_RETRIES", "1.5"),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_unusable_numbers_are_502_naming_the_setting(
    request: pytest.FixtureRequest, provider: str, setting: str, value: str
) -> None:
    server: FakeLLMServer = request.getfixturevalue(f"{provider}_llm")
    request.getfixturevalue("llm_env").setenv(setting, value)
    result = post_chat(HELLO)
    assert result.status == 502 and setting in result.body["error"], result.body
    assert server.requests == []
