"""Issue 9 item 2: a key never reaches a log line, whatever a provider's body quotes and whatever logs it.

Keys of several shapes are configured (OpenAI-style, Google-style, a plain random string) and every error
path a provider body can take quotes them back (200 without choices, 4xx/5xx bodies, malformed JSON, HTML
pages, unknown enum values the SDK warns about). The route answers, and the log output captured at DEBUG
for every logger (ours, the SDKs', httpx's) must hold no key in any spelling; so must the real server's
output file.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from agent_app.log_redaction import REDACTED, redact
from agent_app.providers import clear_adapter_cache
from fake_llm import FakeLLMServer, Reply, error_reply, json_reply, raw_reply
from tests.chat_support import post_chat
from testsupport.streamlit_server import run_streamlit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # google-genai warns quoting the key
HELLO = json.dumps({"messages": [{"role": "user", "content": "Hello"}]}).encode()


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


KEY_SHAPES = {
    "openai": "sk-proj-" + _random(string.ascii_letters + string.digits + "_-", 48),
    "google": "AIza" + _random(string.ascii_letters + string.digits + "_-", 35),
    "plain": _random(string.ascii_letters + string.digits, 24),
    "punctuated": "p@ss/w0rd+" + _random(string.ascii_letters, 12) + "==",
}


def spellings(key: str) -> list[str]:
    """The ways a log line could quote a key: verbatim, URL-encoded, JSON-escaped, and its long fragments."""
    return [key, quote(key, safe=""), json.dumps(key)[1:-1], key[:16], key[-16:]]


def openai_bodies(key: str) -> dict[str, Reply]:
    return {
        "200-error-string": json_reply({"error": f"bad key {key}"}),
        "200-error-object": json_reply({"error": {"message": f"invalid api key {key}", "code": key}}),
        "200-a-list": json_reply([key, {"key": key}]),
        "200-empty-choices": json_reply({"id": key, "object": "chat.completion", "choices": [], "model": key}),
        "200-not-json": raw_reply(f"not json at all: {key}".encode()),
        "200-html": raw_reply(f"<html><body>Login with {key}</body></html>".encode(), content_type="text/html"),
        "400": error_reply(400, f"bad request for {key}"),
        "401": error_reply(401, f"Incorrect API key provided: {key}"),
        "403": error_reply(403, f"key {key} may not use this model"),
        "404": error_reply(404, f"no model for {key}"),
        "429": error_reply(429, f"rate limited: {key}", retry_after_ms=1),
        "500": error_reply(500, f"exploded while checking {key}"),
        "502-html": raw_reply(f"<html>502 Bad Gateway {key}</html>".encode(), status=502, content_type="text/html"),
        "503-text": raw_reply(f"unavailable {key}".encode(), status=503, content_type="text/plain"),
    }


def gemini_bodies(key: str) -> dict[str, Reply]:
    return {
        "200-blocked-unknown-reason": json_reply({"promptFeedback": {"blockReason": key}}),
        "200-no-candidates": json_reply({"candidates": [], "modelVersion": key}),
        "200-safety-message": json_reply(
            {"candidates": [{"finishReason": "SAFETY", "finishMessage": f"blocked for {key}"}]}
        ),
        "200-unknown-finish": json_reply({"candidates": [{"finishReason": key, "content": {"parts": []}}]}),
        "200-a-list": json_reply([key]),
        "200-not-json": raw_reply(f"not json {key}".encode()),
        "200-html": raw_reply(f"<html>{key}</html>".encode(), content_type="text/html"),
        "400": error_reply(400, f"API key not valid: {key}"),
        "401": error_reply(401, f"unauthenticated {key}"),
        "403": error_reply(403, f"permission denied for {key}"),
        "429": error_reply(429, f"quota of {key} exhausted"),
        "500": error_reply(500, f"internal {key}"),
        "503-html": raw_reply(f"<html>503 {key}</html>".encode(), status=503, content_type="text/html"),
    }


def _configure(monkeypatch: pytest.MonkeyPatch, fake: FakeLLMServer, provider: str, key: str) -> None:
    monkeypatch.setenv("LLM_PROVIDER", provider)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_API_KEY", key)
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "5")
    monkeypatch.setenv("LLM_BASE_URL", fake.openai_base_url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.gemini_base_url)
    clear_adapter_cache()


@pytest.mark.parametrize("shape", sorted(KEY_SHAPES))
@pytest.mark.parametrize("provider", ["openai-compatible", "gemini"])
def test_no_provider_body_puts_the_key_in_a_log_line(
    shape: str, provider: str, fake_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = KEY_SHAPES[shape]
    _configure(llm_env, fake_llm, provider, key)
    bodies = openai_bodies(key) if provider == "openai-compatible" else gemini_bodies(key)
    script = fake_llm.chat if provider == "openai-compatible" else fake_llm.gemini
    caplog.set_level(logging.DEBUG)  # every logger, the SDKs' and httpx's debug lines included
    for name, reply in bodies.items():
        caplog.clear()
        script.push(reply)
        result = post_chat(HELLO)
        assert result.status == 502, name
        assert key not in json.dumps(result.body), name
        logged = caplog.text + "".join(str(r.exc_text or "") for r in caplog.records)
        assert "LLM provider error" in logged, name  # the failure is logged...
        leaked = [spelling for spelling in spellings(key) if spelling in logged]
        assert not leaked, (name, leaked, logged[-2000:])  # ...without the key
    assert len(script.requests) == len(bodies)


def test_every_secret_setting_and_key_shape_is_redacted_from_any_record(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only the LLM key: the transcription key, the route token, the database URL and its password, the
    SDKs' own variables, and key-shaped text nobody configured; in the message, its arguments, a traceback
    and a stack."""
    configured = {
        "LLM_API_KEY": KEY_SHAPES["plain"],
        "TRANSCRIBE_API_KEY": KEY_SHAPES["punctuated"],
        "AGENT_API_TOKEN": "route-" + _random(string.ascii_lowercase, 20),
        "OPENAI_API_KEY": "env-openai-" + _random(string.digits, 20),
        "GEMINI_API_KEY": "env-gemini-" + _random(string.digits, 20),
        "GOOGLE_API_KEY": "env-google-" + _random(string.digits, 20),
    }
    password = "pg-" + _random(string.ascii_letters, 18)
    configured["AGENT_DATABASE_URL"] = f"postgresql://agent:{password}@db.example:5432/agent"
    for name, value in configured.items():
        monkeypatch.setenv(name, value)
    unconfigured = [KEY_SHAPES["openai"], KEY_SHAPES["google"], "sk-ant-api03-" + "x" * 30, "gsk_" + "y" * 40]
    everything = [*configured.values(), *unconfigured, password]  # the password alone too (libpq may quote it)
    bearer = "opaque-" + _random(string.ascii_lowercase, 16)  # built at run time: a stack quotes source lines
    caplog.set_level(logging.DEBUG)
    for logger_name in ("agent_app.routes.chat", "httpx", "openai._base_client", "google_genai.models", "streamlit"):
        logger = logging.getLogger(logger_name)
        logger.warning("as the message: %s", " ".join(everything))
        logger.warning("as an argument: %r", {"keys": everything})
        try:
            raise RuntimeError(f"in an exception: {everything}")
        except RuntimeError:
            logger.exception("as a traceback")
        logger.warning("Authorization: Bearer %s", bearer, stack_info=True)
    logged = caplog.text
    assert logged.count(REDACTED) >= 5 * len(everything)
    for secret in [*everything, bearer]:
        assert not [s for s in spellings(secret) if s in logged], secret
    assert "skipping the file" in redact("skipping the file")  # words are not keys


def test_real_server_output_holds_no_key(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """``streamlit run app.py`` with the route token and both keys set; each provider quotes all of them
    back through several bodies; the process's whole output is searched."""
    key = KEY_SHAPES["plain"]
    token = "route-" + _random(string.ascii_letters, 24)
    transcribe_key = KEY_SHAPES["punctuated"]
    quoted = f"{key} {token} {transcribe_key}"
    env = {
        "AGENT_DATA_DIR": str(tmp_path / "data"),
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": key,
        "LLM_MAX_RETRIES": "0",
        "LLM_BASE_URL": fake_llm.openai_base_url,
        "GOOGLE_GEMINI_BASE_URL": fake_llm.gemini_base_url,
        "AGENT_API_TOKEN": token,
        "TRANSCRIBE_API_KEY": transcribe_key,
    }
    outputs: list[str] = []
    for provider, bodies, script in (
        ("openai-compatible", openai_bodies(quoted), fake_llm.chat),
        ("gemini", gemini_bodies(quoted), fake_llm.gemini),
    ):
        names = ["200-a-list", "200-not-json", "200-html", "401", "500"]
        names.append("200-error-string" if provider == "openai-compatible" else "200-blocked-unknown-reason")
        picked = {name: bodies[name] for name in names}
        with run_streamlit({**env, "LLM_PROVIDER": provider}, tmp_path) as server:
            url = f"{server.base_url}/api/agent/chat"
            for name, reply in picked.items():
                script.push(reply)
                answer = httpx.post(url, content=HELLO, headers={"Authorization": f"Bearer {token}"}, timeout=30)
                assert answer.status_code == 502, name
                assert all(secret not in answer.text for secret in (key, token, transcribe_key))
            outputs.append(server.output())
    output = "\n".join(outputs)
    assert output.count("LLM provider error") >= 2 * 6  # the failures are logged...
    for secret in (key, token, transcribe_key):
        assert not [s for s in spellings(secret) if s in output], secret  # ...and no secret is
