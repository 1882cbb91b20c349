"""The signed-in app for the sign-in tests: a real OpenID Connect provider (``oidc-provider-mock``), the app
under ``streamlit run app.py`` with an ``[auth]`` section pointing at it, and people signing in through the
provider's own form in Chromium, each in a browser context of their own (their own cookies)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import URLSafeTimedSerializer
from playwright.sync_api import Browser, Page, expect

from tests.browser_support import UI_TIMEOUT_MS
from testsupport.oidc_provider import OidcProvider
from testsupport.streamlit_server import free_port

COOKIE_SECRET = "test-cookie-secret-not-a-real-one-0123456789"
USER_COOKIE = "_streamlit_user"
"""Streamlit's identity cookie (``streamlit.web.server.starlette.starlette_server_config.USER_COOKIE_NAME``)."""


@dataclass(frozen=True)
class SignInApp:
    """Where the signed-in app will listen and the environment that turns sign-in on."""

    port: int
    env: dict[str, str]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def sign_in_app(provider: OidcProvider, folder: Path, base_env: dict[str, str]) -> SignInApp:
    """A secrets file with an ``[auth]`` section for ``provider`` (read through Streamlit's ``secrets.files``)."""
    port = free_port()
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{COOKIE_SECRET}"\n'
        'client_id = "agent-session-shell"\n'
        'client_secret = "test-client-secret"\n'
        f'server_metadata_url = "{provider.metadata_url}"\n'
    )
    return SignInApp(port, {**base_env, "STREAMLIT_SECRETS_FILES": str(secrets)})


def sign_in(browser: Browser, app: SignInApp, subject: str, path: str = "/") -> Page:
    """A new browser context signed in as ``subject`` through the provider's form, at ``path`` of the app."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(app.base_url + path)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_placeholder("sub").fill(subject)
    page.get_by_role("button", name="Authorize").click()
    expect(page.get_by_text("Media library", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
    return page


def cookies_of(page: Page) -> list[dict[str, object]]:
    return [dict(cookie) for cookie in page.context.cookies()]


def with_cookies(browser: Browser, cookies: list[dict[str, object]], url: str) -> Page:
    """A fresh browser context holding exactly ``cookies`` (a copy taken elsewhere), at ``url``."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_cookies(cookies)  # type: ignore[arg-type]
    page = context.new_page()
    page.goto(url)
    return page


def user_cookie(cookies: list[dict[str, object]]) -> str:
    return next(str(cookie["value"]) for cookie in cookies if cookie["name"] == USER_COOKIE)


def replaced_user_cookie(cookies: list[dict[str, object]], value: str) -> list[dict[str, object]]:
    return [{**cookie, "value": value} if cookie["name"] == USER_COOKIE else cookie for cookie in cookies]


def signed_long_ago(cookie_value: str, days: float) -> str:
    """The same identity cookie, validly signed with the app's secret but ``days`` old: what a browser would
    send long after signing in (Streamlit accepts a cookie for 31 days)."""
    serializer = URLSafeTimedSerializer(COOKIE_SECRET, salt=USER_COOKIE)
    payload = serializer.loads(cookie_value)
    assert isinstance(payload, str) and json.loads(payload)["is_logged_in"] is True

    class _Then(serializer.signer):  # type: ignore[name-defined,misc]
        def get_timestamp(self) -> int:
            return int(super().get_timestamp() - days * 86_400)

    return URLSafeTimedSerializer(COOKIE_SECRET, salt=USER_COOKIE, signer=_Then).dumps(payload)
