"""Every setting of the app, read in this one module: Streamlit secrets first (Community Cloud and
``.streamlit/secrets.toml``), then the environment (containers, CI); documented in ``.streamlit/secrets.toml.example``.

A value that cannot be used leaves its setting at the default and is recorded in :attr:`Settings.problems`,
so only what needs that setting refuses to work, naming the setting, never its value (it may be a key).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from agent_app.log_redaction import secret_values


class SettingsError(ValueError):
    """Settings that cannot be used; the message names each setting and what it must be, never a value."""


def _not_a_flag(value: Any) -> Any:
    if isinstance(value, bool):  # TOML ``true`` is not a count
        raise ValueError("a flag is not a number")
    return value


def _names(value: Any) -> Any:
    """A TOML array, or a comma-separated string from anywhere."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _json_table(value: Any) -> Any:
    """A TOML table as it is, a JSON object from the environment parsed."""
    return json.loads(value) if isinstance(value, str) else value


@pydantic_dataclass(frozen=True, config=ConfigDict(allow_inf_nan=False))
class Prices:
    """What a model costs, in US dollars per million tokens in and out."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class SignInSettings(BaseModel):
    """The secrets' ``[auth]`` section, as far as this app needs it: Streamlit's ``st.login`` reads the rest
    (the provider's ``client_id``, ``client_secret``, ``server_metadata_url``) itself. Its presence turns
    sign-in on."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cookie_secret: str = Field(min_length=16, repr=False)
    """Signs Streamlit's identity cookie, and (through a derived key) the player's media URLs: the same in
    every replica."""
    redirect_uri: str = Field(pattern=r"^https?://[^/?#]+/oauth2callback$")
    """``<the app's public address>/oauth2callback``: its origin is the only one a browser may act from."""

    @property
    def origin(self) -> str:
        """The app's public origin (``scheme://host[:port]``), from ``redirect_uri``."""
        return self.redirect_uri.removesuffix("/oauth2callback")


SIGN_IN_SECTION = "[auth]"
"""The name the ``[auth]`` section's problems are recorded under."""

Whole = Annotated[int, BeforeValidator(_not_a_flag)]
Number = Annotated[float, BeforeValidator(_not_a_flag)]


class Settings(BaseModel):
    """The app's settings, validated. Field aliases are the setting names users write."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, coerce_numbers_to_str=True)

    # --- the assistant's model
    llm_provider: Annotated[str | None, BeforeValidator(_lower)] = Field(None, alias="LLM_PROVIDER")
    llm_model: str | None = Field(None, alias="LLM_MODEL")
    llm_api_key: str | None = Field(None, alias="LLM_API_KEY", repr=False)
    llm_base_url: str | None = Field(None, alias="LLM_BASE_URL")
    gemini_base_url: str | None = Field(None, alias="GOOGLE_GEMINI_BASE_URL")
    llm_timeout_seconds: Number = Field(
        60.0, alias="LLM_TIMEOUT_SECONDS", gt=0, le=86_400, description="a positive number of seconds, at most a day"
    )
    llm_max_retries: Whole = Field(2, alias="LLM_MAX_RETRIES", ge=0, description="an integer, 0 or more")
    llm_retry_backoff_seconds: Number = Field(
        0.5, alias="LLM_RETRY_BACKOFF_SECONDS", ge=0, description="a finite number of seconds, 0 or more"
    )
    llm_max_stream_seconds: Number = Field(
        600.0,
        alias="LLM_MAX_STREAM_SECONDS",
        gt=0,
        le=86_400,
        description="a positive number of seconds, at most a day",
    )
    llm_max_answer_chars: Whole = Field(
        200_000, alias="LLM_MAX_ANSWER_CHARS", gt=0, description="a positive whole number of characters"
    )
    llm_context_tokens: Whole | None = Field(
        None, alias="LLM_CONTEXT_TOKENS", gt=0, description="a positive whole number of tokens"
    )
    llm_max_output_tokens: Whole | None = Field(
        None, alias="LLM_MAX_OUTPUT_TOKENS", gt=0, description="a positive whole number of tokens"
    )
    llm_prices: Annotated[dict[str, Prices] | None, BeforeValidator(_json_table)] = Field(
        None,
        alias="LLM_PRICES",
        description="a table of model names to {input, output} US dollars per million tokens",
    )
    # --- transcription
    transcribe_backend: Annotated[Literal["local", "moonshine", "openai", "gemini"], BeforeValidator(_lower)] = Field(
        "local", alias="TRANSCRIBE_BACKEND", description="one of local, moonshine, openai, gemini"
    )
    transcribe_model: str | None = Field(None, alias="TRANSCRIBE_MODEL")
    transcribe_api_key: str | None = Field(None, alias="TRANSCRIBE_API_KEY", repr=False)
    transcribe_base_url: str | None = Field(None, alias="TRANSCRIBE_BASE_URL")
    # --- the HTTP route
    api_token: str | None = Field(None, alias="AGENT_API_TOKEN", repr=False)
    max_body_bytes: Whole = Field(
        2_000_000, alias="AGENT_MAX_BODY_BYTES", gt=0, description="a positive integer (bytes)"
    )
    max_concurrent_chats: Whole = Field(
        256, alias="AGENT_MAX_CONCURRENT_CHATS", gt=0, description="a positive integer (requests)"
    )
    # --- the page
    allow_remote_page: bool = Field(False, alias="AGENT_ALLOW_REMOTE_PAGE", description="true or false")
    # --- sign-in (the secrets' [auth] section turns it on)
    sign_in: SignInSettings | None = Field(
        None,
        alias=SIGN_IN_SECTION,
        description="a table with cookie_secret (16 characters or more) and redirect_uri"
        " (the app's address followed by /oauth2callback)",
    )
    pre_sign_in_owner: str | None = Field(
        None, alias="AGENT_PRE_SIGN_IN_OWNER", pattern=r"^[^@\s]+@[^@\s]+$", description="an email address"
    )
    # --- tools and storage
    enabled_tools: Annotated[tuple[str, ...], BeforeValidator(_names)] = Field(
        ("transcribe_video",), alias="AGENT_ENABLED_TOOLS", description="a list of tool names"
    )
    data_dir: Path = Field(Path("data"), alias="AGENT_DATA_DIR", description="a directory path")
    database_url: str | None = Field(
        None,
        alias="AGENT_DATABASE_URL",
        repr=False,
        pattern=r"^postgres(ql)?://",
        description="a postgresql:// URL",
    )
    db_busy_timeout_ms: Whole = Field(
        10_000, alias="AGENT_DB_BUSY_TIMEOUT_MS", ge=0, description="an integer (milliseconds), 0 or more"
    )
    in_process_workers: Whole = Field(
        4,
        alias="AGENT_IN_PROCESS_WORKERS",
        ge=0,
        description="a whole number of runs, 0 or more (0: no worker in the app's process)",
    )
    max_upload_mb: Whole = Field(
        1024, alias="AGENT_MAX_UPLOAD_MB", gt=0, description="a positive whole number of megabytes"
    )
    media_store: str | None = Field(
        None,
        alias="AGENT_MEDIA_STORE",
        pattern=r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$",
        description="an s3://bucket/prefix URL",
    )
    s3_endpoint_url: str | None = Field(
        None, alias="AGENT_S3_ENDPOINT_URL", pattern=r"^https?://", description="an http:// or https:// URL"
    )
    media_url_seconds: Whole = Field(
        600, alias="AGENT_MEDIA_URL_SECONDS", ge=60, le=3600, description="a whole number of seconds, 60 to 3600"
    )

    problems: tuple[tuple[str, str], ...] = ()
    """``(setting name, message)`` for each value that could not be used (the default stands in)."""

    def problems_with(self, *names: str) -> list[str]:
        """The messages about those of ``names`` that are invalid, in the order asked."""
        found = dict(self.problems)
        return [found[name] for name in names if name in found]

    def require(self, *names: str) -> None:
        """Raise :class:`SettingsError` naming every one of ``names`` whose value is unusable."""
        messages = self.problems_with(*names)
        if messages:
            raise SettingsError("; ".join(messages))

    @property
    def secrets(self) -> tuple[str, ...]:
        """The configured secret values (:data:`~agent_app.log_redaction.SECRET_SETTINGS`: the keys, the route
        token, the database URL and its password; and the sign-in cookie secret): kept out of answers as out
        of logs."""
        by_name = {str(field.alias): getattr(self, name) for name, field in Settings.model_fields.items()}
        values = secret_values(by_name)
        if self.sign_in is not None:
            values.append(self.sign_in.cookie_secret)
        return tuple(sorted(set(values), key=len, reverse=True))

    @property
    def sign_in_on(self) -> bool:
        """Whether the secrets have an ``[auth]`` section, usable or not: an unusable one still closes every
        door (the page and the route refuse, naming the problem), never opens the app to everyone."""
        return self.sign_in is not None or bool(self.problems_with(SIGN_IN_SECTION))

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024


SETTING_NAMES: tuple[str, ...] = tuple(
    str(field.alias) for name, field in Settings.model_fields.items() if name not in ("problems", "sign_in")
)
"""The names users set one by one (the ``[auth]`` section is Streamlit's, read as a whole)."""
_DESCRIPTIONS = {str(field.alias): field.description for field in Settings.model_fields.values()}


def _secrets_paths() -> tuple[str, ...]:
    """Where Streamlit looks for secrets (``secrets.files``: the user's, the working directory's and the main
    script's ``.streamlit/secrets.toml``)."""
    from streamlit import config

    return tuple(str(path) for path in config.get_option("secrets.files"))


def _secrets() -> Mapping[str, Any]:
    """The parsed Streamlit secrets, or an empty mapping when there is no (readable) secrets file.

    Streamlit keeps secrets it has parsed, but tries again to read a missing file on every call; with no file
    there (the usual case outside Community Cloud) a look at the paths answers instead."""
    from streamlit.runtime.secrets import secrets_singleton

    paths = _secrets_paths()
    if not any(os.path.exists(path) for path in paths):
        return {}
    try:
        return dict(secrets_singleton.items()) if secrets_singleton.load_if_toml_exists() else {}
    except Exception:  # noqa: BLE001 - an unreadable secrets file must not take the app down
        return {}


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def raw_settings(names: Iterable[str] = SETTING_NAMES, *, secrets_file: bool = True) -> dict[str, Any]:
    """Each of ``names`` that is set, with its raw value: from secrets when given there, else from the
    environment (the log redaction also asks for the SDKs' own key variables this way)."""
    secrets = _secrets() if secrets_file else {}
    values: dict[str, Any] = {}
    for name in names:
        value = secrets.get(name)
        if not _given(value):
            value = os.environ.get(name)
        if _given(value):
            values[name] = value.strip() if isinstance(value, str) else value
    return values


def load_settings() -> Settings:
    """The settings now; never raises: unusable values are in :attr:`Settings.problems`.

    Called only where work starts, and the result passed down from there: a page run
    (``ui.page_layout.render_page``), a run starting (``ui.resources.current_assistant``), a route request
    (``routes.chat.chat_endpoint``, ``routes.media.media_endpoint``), a command
    (``storage.copy_to_postgres.main``, ``worker.main``)."""
    raw = raw_settings()
    auth = _secrets().get("auth")
    if auth is not None:
        raw[SIGN_IN_SECTION] = dict(auth) if isinstance(auth, Mapping) else auth
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        bad = sorted({str(error["loc"][0]) for error in exc.errors()})
    problems = tuple((name, f"Setting {name} must be {_DESCRIPTIONS.get(name) or 'valid'}") for name in bad)
    usable = {name: value for name, value in raw.items() if name not in bad}
    return Settings.model_validate({**usable, "problems": problems})
