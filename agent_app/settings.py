"""One place that reads the app's settings: Streamlit secrets first, then the environment.

Secrets win because that is where Streamlit Community Cloud and ``.streamlit/secrets.toml`` put
them; the environment serves containers and CI. Values are read on every call (cheap: Streamlit
caches the parsed file) so a changed secret takes effect without a restart. Nothing here logs a
value: callers decide what may be shown (a setting's *name*, never a key).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

NO_SECRETS_RECHECK_SECONDS = 2.0
"""Without a secrets file, look for one again at most this often: Streamlit caches a parsed file but
not its absence, and probing the paths costs ~0.1 ms per setting read (the route reads several per
request). A file created while the app runs is still picked up within this delay."""


class _NoSecretsFile:
    """Until when (``time.monotonic()``) the last probe's "no secrets file" answer is trusted."""

    until = 0.0


def _secrets() -> Mapping[str, Any]:
    """The parsed Streamlit secrets, or an empty mapping when there is no secrets file."""
    now = time.monotonic()
    if now < _NoSecretsFile.until:
        return {}
    try:
        from streamlit.runtime.secrets import secrets_singleton
    except ImportError:  # pragma: no cover - streamlit is a hard dependency
        return {}
    if not secrets_singleton.load_if_toml_exists():
        _NoSecretsFile.until = now + NO_SECRETS_RECHECK_SECONDS
        return {}
    try:
        return dict(secrets_singleton.items())
    except Exception:  # noqa: BLE001 - an unreadable secrets file must not take the app down
        return {}


def read_setting(name: str) -> Any | None:
    """The value of setting ``name`` or ``None`` when unset; an empty string counts as unset."""
    value = _secrets().get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = os.environ.get(name)
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def read_str(name: str, default: str | None = None) -> str | None:
    """A string setting (non-strings are converted), ``default`` when unset."""
    value = read_setting(name)
    return default if value is None else str(value)


def read_int(name: str, default: int) -> int:
    """An integer setting; an unparsable value is an error that names the setting, not a guess."""
    value = read_setting(name)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"Setting {name} must be an integer") from None


def read_float(name: str, default: float) -> float:
    """A number setting; an unparsable value is an error that names the setting."""
    value = read_setting(name)
    if value is None:
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"Setting {name} must be a number") from None


def read_list(name: str, default: list[str]) -> list[str]:
    """A list setting: a TOML array in secrets, or a comma-separated string anywhere."""
    value = read_setting(name)
    if value is None:
        return list(default)
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]
