"""Shared fixtures. ``fake_llm``: a fresh fake LLM server per test (see the ``fake_llm`` package);
``openai_llm`` / ``gemini_llm``: the same, with the app configured to use it; ``storage``: a fresh storage
in the test's own directory, on the ``backend`` the test asks for (SQLite unless a module parametrizes
it, see ``tests/storage_backends.py``); ``postgres_url``: a fresh database on the session's PostgreSQL
server. Every test's run managers are closed after it, so no test leaves run workers behind (each holds a
thread, an event loop and SDK clients with open connections)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.providers import clear_adapter_cache
from agent_app.storage import close_opened_storages
from agent_app.ui.resources import close_run_managers
from fake_llm import CANARY_API_KEY, FakeLLMServer
from tests.browser_failure_report import pytest_runtest_makereport
from tests.network_change_lock import _steady_network_for_browsers
from tests.storage_backends import (
    AnyStorage,
    Backend,
    PostgresForTests,
    backend_for,
    fresh_database_url,
    postgres_for_tests,
)
from tests.transcribe_support import SETTINGS as TRANSCRIBE_SETTINGS
from testsupport.seaweedfs_server import SeaweedServer, running_seaweedfs

# The hook that reports a failed browser test's tabs, and the fixture that keeps network changes from them.
__all__ = ["_steady_network_for_browsers", "pytest_runtest_makereport"]

LLM_SETTINGS = (
    "LLM_PROVIDER",
    "LLM_MODEL",
    "LLM_API_KEY",
    "LLM_BASE_URL",
    "LLM_TIMEOUT_SECONDS",
    "LLM_MAX_RETRIES",
    "LLM_RETRY_BACKOFF_SECONDS",
    "LLM_MAX_STREAM_SECONDS",
    "LLM_MAX_ANSWER_CHARS",
    "LLM_CONTEXT_TOKENS",
    "LLM_MAX_OUTPUT_TOKENS",
    "GOOGLE_GEMINI_BASE_URL",
    "AGENT_API_TOKEN",
    "AGENT_MAX_BODY_BYTES",
)


@pytest.fixture(autouse=True)
def _close_run_managers() -> Iterator[None]:
    """The page's run managers (one per data folder, and each test has its own) end with the test, and so
    do the storages the page opened (a PostgreSQL pool would otherwise outlive its test's database)."""
    yield
    close_run_managers()
    close_opened_storages()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresForTests]:
    """One PostgreSQL server for the whole session, started on first use; fails (never skips) without it."""
    yield from postgres_for_tests()


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedServer]:
    """One S3-compatible server (SeaweedFS ``weed mini``) for the session, started on first use; each test
    takes a bucket of its own (``seaweedfs.create_bucket()``)."""
    with running_seaweedfs() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresForTests) -> Iterator[str]:
    """A database of the test's own; the page's run managers on it (and their queue workers, which say
    goodbye to the queue) end before it is dropped."""
    databases = fresh_database_url(postgres_server)
    yield next(databases)
    close_run_managers()
    next(databases, None)


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """SQLite in the test's folder; modules that test both backends override this with parameters."""
    chosen = backend_for(request, "sqlite", tmp_path / "data")
    yield chosen
    chosen.close_all()


@pytest.fixture
def storage(backend: Backend) -> AnyStorage:
    return backend.open()


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


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No LLM or route setting from the outside environment leaks into the test; adapters start fresh."""
    for name in LLM_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    clear_adapter_cache()
    yield monkeypatch
    clear_adapter_cache()


@pytest.fixture
def offline_transcription(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The default (offline) transcription backend, whatever the developer's shell exports: every
    setting or SDK variable that could redirect a transcription is cleared."""
    for name in TRANSCRIBE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


@pytest.fixture
def moonshine_transcription(offline_transcription: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The Moonshine offline backend: for the tests of decoding and damage, which bound each sentence's words
    at 15 % and so cannot use tiny.en (it hears espeak-ng's "brown fox" as "roundfark" or "roundfire");
    the default's own bounds are in tests/test_whisper_words.py."""
    offline_transcription.setenv("TRANSCRIBE_BACKEND", "moonshine")
    return offline_transcription


def _configure(monkeypatch: pytest.MonkeyPatch, provider: str, **settings: str) -> None:
    for name, value in {
        "LLM_PROVIDER": provider,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": CANARY_API_KEY,
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_SECONDS": "5",
        **settings,
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def openai_llm(fake_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> FakeLLMServer:
    """The app configured for ``openai-compatible`` at the fake server."""
    _configure(llm_env, "openai-compatible", LLM_BASE_URL=fake_llm.openai_base_url)
    return fake_llm


@pytest.fixture
def gemini_llm(fake_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> FakeLLMServer:
    """The app configured for ``gemini``, reaching the fake server through ``GOOGLE_GEMINI_BASE_URL``."""
    _configure(llm_env, "gemini", GOOGLE_GEMINI_BASE_URL=fake_llm.gemini_base_url, LLM_RETRY_BACKOFF_SECONDS="0.01")
    return fake_llm
