"""The rules of sign-in without a browser: who a cookie's sign-in is, who gets the projects made before sign-in,
the media URL's signature and lifetime (the numbers docs/deploy.md states), the chat route's token and Origin
checks with sign-in on, and an unusable ``[auth]`` section closing the doors instead of opening them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_app.errors import ErrorKind
from agent_app.routes.access import authorize_signed_in, page_refusal
from agent_app.settings import SIGN_IN_SECTION, Settings
from agent_app.sign_in.api_tokens import make_api_token, token_hash, token_owner
from agent_app.sign_in.identity import gets_pre_sign_in_projects, signed_in_user
from agent_app.sign_in.media_links import MediaSigner
from agent_app.storage import Owner, SqliteStorage

ROOT = Path(__file__).resolve().parent.parent
AUTH = {"cookie_secret": "s" * 32, "redirect_uri": "https://app.example/oauth2callback", "client_id": "x"}
SIGNED_IN = Settings.model_validate({SIGN_IN_SECTION: AUTH})
CLAIMS = {"is_logged_in": True, "iss": "https://id.example", "sub": "alice", "aud": "x", "iat": 1, "nonce": "n1"}


def test_a_sign_in_is_named_by_its_id_token_and_signing_in_again_is_another() -> None:
    first = signed_in_user({**CLAIMS, "email": "a@example.com", "email_verified": True, "name": "Alice"})
    assert first is not None and first.owner == Owner(issuer="https://id.example", subject="alice")
    assert first.name == "Alice"
    copy = signed_in_user(dict(CLAIMS))
    assert copy is not None and copy.sign_in_id == first.sign_in_id  # a copy of the same cookie
    again = signed_in_user({**CLAIMS, "iat": 2, "nonce": "n2"})
    assert again is not None and again.sign_in_id != first.sign_in_id and again.owner == first.owner
    assert signed_in_user({**CLAIMS, "is_logged_in": False}) is None
    assert signed_in_user({**CLAIMS, "sub": " "}) is None  # nobody could own anything
    assert signed_in_user({"is_logged_in": True, "sub": "alice"}) is None


def test_the_projects_made_before_sign_in_go_to_the_verified_email_named() -> None:
    verified = signed_in_user({**CLAIMS, "email": "Owner@Example.com", "email_verified": True})
    unverified = signed_in_user({**CLAIMS, "email": "owner@example.com", "email_verified": "true"})
    assert verified is not None and unverified is not None
    assert gets_pre_sign_in_projects(verified, "owner@example.com")
    assert not gets_pre_sign_in_projects(unverified, "owner@example.com")  # only a provider-verified address
    assert not gets_pre_sign_in_projects(verified, None)
    assert not gets_pre_sign_in_projects(verified, "other@example.com")


def test_a_media_url_lives_its_lifetime_to_half_as_long_again_and_stays_the_same_meanwhile() -> None:
    assert SIGNED_IN.media_url_seconds == 600  # the default docs/deploy.md states
    signer = MediaSigner.for_settings(SIGNED_IN)
    assert signer is not None and MediaSigner.for_settings(Settings()) is None
    now = 1_800_000_123.0
    query, expires = signer.query("a" * 32, "s1", now)
    assert 600 <= expires - now < 900 and expires % 300 == 0
    assert signer.query("a" * 32, "s1", now + 60)[0] == query  # the same URL for a while: no reload per rerun
    params = dict(part.split("=") for part in query.split("&"))
    assert signer.valid("a" * 32, params, now) == "s1"
    assert signer.valid("a" * 32, params, expires) is None  # expired
    assert signer.valid("b" * 32, params, now) is None  # another asset
    assert signer.valid("a" * 32, {**params, "signin": "s2"}, now) is None  # another sign-in
    assert signer.valid("a" * 32, {**params, "expires": str(expires + 300)}, now) is None
    assert signer.valid("a" * 32, {**params, "expires": "1e9"}, now) is None
    other = MediaSigner.for_settings(Settings.model_validate({SIGN_IN_SECTION: {**AUTH, "cookie_secret": "t" * 32}}))
    assert other is not None and other.valid("a" * 32, params, now) is None  # another secret
    short = MediaSigner.for_settings(Settings.model_validate({SIGN_IN_SECTION: AUTH, "AGENT_MEDIA_URL_SECONDS": 60}))
    assert short is not None and 60 <= short.expiry(now) - now < 90  # the setting the object store's URLs use


def test_the_route_wants_a_live_personal_token_and_no_other_site_with_sign_in_on(tmp_path: Path) -> None:
    accounts = SqliteStorage(tmp_path).accounts()
    alice = Owner(issuer="https://id.example", subject="alice")
    _, token = make_api_token(accounts, alice, "script")
    assert token_owner(accounts, token) == alice and token_owner(accounts, token + "x") is None
    assert token_owner(accounts, token_hash(token)) is None  # the stored hash is no token

    def check(headers: dict[str, str]) -> ErrorKind | None:
        denied = authorize_signed_in(headers, SIGNED_IN, lambda given: token_owner(accounts, given))
        return None if denied is None else denied.kind

    bearer = {"Authorization": f"Bearer {token}"}
    assert check(bearer) is None
    assert check({**bearer, "Origin": "https://app.example"}) is None  # the app's own page
    assert check({}) is ErrorKind.UNAUTHORIZED  # loopback is no exception
    assert check({"Authorization": "Bearer nope"}) is ErrorKind.UNAUTHORIZED
    for foreign in ({"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        assert check({**bearer, **foreign}) is ErrorKind.FORBIDDEN, foreign
    assert page_refusal({"X-Forwarded-For": "203.0.113.9"}, "10.0.0.1", SIGNED_IN) is None  # served: signed in


def test_an_unusable_auth_section_keeps_every_door_shut(tmp_path: Path) -> None:
    """A secrets file whose [auth] lacks its cookie secret, in a fresh process (Streamlit keeps a secrets file
    it has read): sign-in is on but unusable, so the page and the route refuse, naming the section."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        '[auth]\nredirect_uri = "https://app.example/oauth2callback"\nclient_id = "x"\n'
    )
    code = (
        "import json\nfrom agent_app.settings import load_settings\n"
        "from agent_app.routes.access import authorize_signed_in, page_refusal\n"
        "s = load_settings()\n"
        "denied = authorize_signed_in({'Authorization': 'Bearer x'}, s, lambda _: 'anyone')\n"
        "print(json.dumps([s.sign_in is None, s.sign_in_on, s.problems_with('[auth]'), str(denied.kind)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    unusable, on, problems, kind = json.loads(done.stdout)
    assert unusable and on and kind == "invalid_configuration"
    assert problems == [f"Setting [auth] must be {Settings.model_fields['sign_in'].description}"]
