"""One redaction step that every log record of the process passes: configured secrets and key-like text out.

Why: redacting at each call site misses the text nobody expected to hold a key (a provider's 200 body
quoting it, an SDK's debug line, a traceback). A log record factory sees every record of every logger
(ours, Streamlit's, httpx's, the SDKs') when it is made, before any handler or formatter reads it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote, urlsplit

SECRET_SETTINGS = (
    "LLM_API_KEY",
    "TRANSCRIBE_API_KEY",
    "AGENT_API_TOKEN",
    "AGENT_DATABASE_URL",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
"""Settings whose values are secrets: the model's and the transcriber's keys, the route token, the database
URL (it holds a password; the password alone is redacted too), and the variables the SDKs read on their own."""
REDACTED = "[redacted]"
KEY_LIKE = re.compile(
    r"\b(?:sk|gsk|xai|pk|rk)[-_][-_A-Za-z0-9*.]{6,}"  # OpenAI (sk-, sk-proj-, sk-ant-), Groq, xAI, ...
    r"|\bAIza[-_A-Za-z0-9]{8,}"  # Google API keys
    r"|(?<=Bearer )[^\s\"',;]+",  # whatever follows "Bearer " (a header echoed in an error)
    re.IGNORECASE,
)
"""Anything shaped like a provider key, configured or not (providers echo partial keys in auth errors)."""

_inside = threading.local()
_formatter = logging.Formatter()


def configured_secrets() -> list[str]:
    """The values of :data:`SECRET_SETTINGS` now (Streamlit secrets and environment), longest first."""
    from agent_app.settings import raw_settings

    reading = getattr(_inside, "reading", False)  # reading the secrets file may log: don't recurse into it
    _inside.reading = True
    try:
        raw = raw_settings(SECRET_SETTINGS, secrets_file=not reading)
    finally:
        _inside.reading = reading
    return secret_values(raw)


def secret_values(settings: Mapping[str, object]) -> list[str]:
    """The values of :data:`SECRET_SETTINGS` among ``settings`` (by setting name), and the password of a
    database URL alone, longest first: one list for the logs and for answers."""
    values = {str(settings[name]) for name in SECRET_SETTINGS if settings.get(name)}
    password = _url_password(str(settings.get("AGENT_DATABASE_URL") or ""))
    if password:
        values.add(password)
    return sorted(values, key=len, reverse=True)


def _url_password(url: str) -> str | None:
    """The password of a ``scheme://user:password@host/...`` URL, decoded, if it has one."""
    try:
        password = urlsplit(url).password
    except ValueError:  # not a URL one can split: the whole value is redacted all the same
        return None
    return unquote(password) if password else None


def _spellings(secret: str) -> list[str]:
    """``secret`` as text may quote it: verbatim, URL-encoded, JSON-escaped, ``repr``-escaped."""
    return list(dict.fromkeys((secret, quote(secret, safe=""), json.dumps(secret)[1:-1], repr(secret)[1:-1])))


def secret_spellings(secrets: Iterable[str]) -> tuple[str, ...]:
    """Every spelling (:func:`_spellings`) of each of ``secrets``, longest first."""
    spellings = {spelling for secret in secrets if secret for spelling in _spellings(secret)}
    return tuple(sorted(spellings, key=len, reverse=True))


def redact_secrets(text: str, spellings: Sequence[str]) -> str:
    """``text`` without any of ``spellings`` (:func:`secret_spellings`): for a model's answer, which may quote
    a key; key-shaped text the user may have asked about stays."""
    for spelling in spellings:
        text = text.replace(spelling, REDACTED)
    return text


class StreamRedactor:
    """:func:`redact_secrets` for text that arrives in pieces, where a secret may be split across two: a tail
    that begins a spelling is held back until the next piece (or :meth:`flush`) shows whether it completes it."""

    def __init__(self, spellings: Sequence[str]) -> None:
        self._spellings = spellings
        self._held_chars = max((len(spelling) for spelling in spellings), default=1) - 1
        self._pending = ""

    def feed(self, delta: str) -> str:
        """The redacted text that can go out now."""
        if not self._spellings:
            return delta
        text = redact_secrets(self._pending + delta, self._spellings)
        cut = len(text) - self._secret_start(text)
        self._pending = text[cut:]
        return text[:cut]

    def _secret_start(self, text: str) -> int:
        """The length of ``text``'s longest tail that a secret could start with (0: nothing to hold)."""
        for size in range(min(len(text), self._held_chars), 0, -1):
            tail = text[-size:]
            if any(spelling.startswith(tail) for spelling in self._spellings):
                return size
        return 0

    def flush(self) -> str:
        """The text held back, at the stream's end."""
        rest, self._pending = self._pending, ""
        return rest


def redact(text: str) -> str:
    """``text`` without the configured secrets and key-like strings."""
    for secret in configured_secrets():
        for spelling in _spellings(secret):
            text = text.replace(spelling, REDACTED)
    return KEY_LIKE.sub(REDACTED, text)


def redact_record(record: logging.LogRecord) -> None:
    """Replace ``record``'s message (formatted with its arguments), traceback and stack with redacted text."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string: logging reports it later; redact the parts
        message = f"{record.msg} {record.args}"
    record.msg, record.args = redact(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = _formatter.formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class _RedactingFactory:
    """Wraps the record factory that was installed before (kept, so another wrapper still works)."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.previous(*args, **kwargs)
        redact_record(record)
        return record


def install() -> None:
    """Make every log record of the process pass :func:`redact_record` (idempotent). Python warnings
    become log records too: an SDK warns with the text it could not parse (google-genai quotes an
    unknown enum value), which would otherwise go to stderr as it is."""
    logging.captureWarnings(True)
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RedactingFactory):
        logging.setLogRecordFactory(_RedactingFactory(current))
