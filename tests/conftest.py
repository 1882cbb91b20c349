"""Shared fixtures. ``fake_llm``: a fresh fake LLM server per test (see ``tests/fake_llm.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_llm import FakeLLMServer


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A fake OpenAI + Gemini server on 127.0.0.1 (free port), stopped after the test."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="session")
def fake_llm_session() -> Iterator[FakeLLMServer]:
    """One fake server for the whole session; tests sharing it call ``reset()`` first."""
    with FakeLLMServer() as server:
        yield server
