"""Sign-in in Chromium against a real OpenID Connect provider (``oidc-provider-mock``, started here): two people
sign in, and what alice made is invisible to bob by every path (the page, links, search, exports, media URLs,
the chat route with bob's own token); a media URL whose signature or expiry was changed is refused; sign-out
is final (a replayed copy of the cookie is refused, and so are the media URLs made for that sign-in); a
tampered or expired cookie is signed out; a request from another site with alice's cookie does nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from agent_app.storage import SqliteStorage
from fake_llm import FakeLLMServer, openai_text
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_expander
from tests.media_samples import make_wav
from tests.sign_in_support import (
    SignInApp,
    cookies_of,
    replaced_user_cookie,
    sign_in,
    sign_in_app,
    signed_long_ago,
    user_cookie,
    with_cookies,
)
from testsupport.oidc_provider import OidcProvider, running_oidc_provider
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the fixture, imported for this module

SECRET_WORDS = "lighthouse"
MADE_BEFORE = "Made before sign-in"
NOT_FOUND = "Not found: the project or conversation this link names does not exist."
SIGNED_OUT = "You are signed out. Sign in to see your projects."
ENDED = "This sign-in has ended (you signed out). Sign in again to go on."


@dataclass(frozen=True)
class Running:
    app: SignInApp
    server: StreamlitServer
    provider: OidcProvider
    fake_llm: FakeLLMServer


@pytest.fixture(scope="module")
def running(fake_llm_session: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One provider and one signed-in app for the module (alice and bob each sign in in their own context)."""
    folder = tmp_path_factory.mktemp("sign-in")
    with running_oidc_provider() as provider:
        for subject in ("alice", "bob"):
            provider.add_user(
                subject, {"email": f"{subject}@example.com", "email_verified": True, "name": subject.title()}
            )
        before = SqliteStorage(folder / "data")  # the app's data before sign-in was configured
        before.create_project(MADE_BEFORE)
        before.close()
        env = {**app_env(fake_llm_session, folder / "data"), "AGENT_PRE_SIGN_IN_OWNER": "Alice@example.com"}
        app = sign_in_app(provider, folder, env)
        with run_streamlit(app.env, folder, port=app.port) as server:
            yield Running(app, server, provider, fake_llm_session)


def _ids(page: Page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}


def _media_src(page: Page) -> str:
    player = page.locator("audio[data-asset]")
    expect(player).to_be_visible(timeout=UI_TIMEOUT_MS)
    return player.get_attribute("src") or ""


def _with(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()} | changes
    return parts._replace(query="&".join(f"{key}={value}" for key, value in query.items() if value)).geturl()


def _make_token(page: Page, name: str) -> str:
    open_expander(page, "API tokens")
    page.get_by_label("Token name").fill(name)
    page.get_by_role("button", name="Make token").click()
    expect(page.get_by_text("Copy it now: it is not shown again.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    token = page.get_by_test_id("stCode").filter(has_text="ass_").inner_text().strip()
    assert re.fullmatch(r"ass_[A-Za-z0-9_-]{40,}", token), token
    return token


def _chat(base_url: str, token: str | None, body: Mapping[str, object], **headers: str) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{base_url}/api/agent/chat", json=body, headers=auth | headers, timeout=30)


def test_what_alice_made_is_invisible_to_bob_by_every_path(browser: Browser, running: Running, tmp_path: Path) -> None:
    fake_llm = running.fake_llm
    fake_llm.reset()
    alice = sign_in(browser, running.app, "alice")
    expect(alice.get_by_text(MADE_BEFORE).first).to_be_visible()  # AGENT_PRE_SIGN_IN_OWNER's: hers now
    voice = make_wav(tmp_path / "alice-voice.wav", seconds=1.0)
    alice.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(voice))
    expect(alice.get_by_text("Added “alice-voice.wav”")).to_be_visible(timeout=UI_TIMEOUT_MS)
    fake_llm.chat.push(openai_text(f"The {SECRET_WORDS} keeper speaks."))
    ask(alice, f"What about the {SECRET_WORDS}?")
    expect(alice.get_by_text(f"The {SECRET_WORDS} keeper speaks.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(alice).to_have_url(re.compile(r"chat="), timeout=UI_TIMEOUT_MS)
    ids = _ids(alice)

    asset_id = _check_media_urls(alice, voice.read_bytes())
    _check_bob_sees_nothing_of_hers(browser, running, alice, ids, asset_id)


def _check_media_urls(alice: Page, voice: bytes) -> str:
    """Signed, with ranges; a changed signature, a later expiry, another sign-in, or none at all is refused."""
    src = _media_src(alice)
    assert re.search(r"/api/media/[0-9a-f]{32}\?signin=[0-9a-f]{64}&expires=\d+&signature=[0-9a-f]{64}$", src), src
    asset_id = urlsplit(src).path.rsplit("/", 1)[1]
    assert httpx.get(src, timeout=10).content == voice
    ranged = httpx.get(src, headers={"Range": "bytes=0-99"}, timeout=10)
    assert ranged.status_code == 206 and ranged.content == voice[:100]
    signature = parse_qs(urlsplit(src).query)["signature"][0]
    expires = int(parse_qs(urlsplit(src).query)["expires"][0])
    for changed in (
        _with(src, signature=("0" if signature[0] != "0" else "1") + signature[1:]),
        _with(src, expires=str(expires + 300)),
        _with(src, expires=str(expires - 3600)),
        _with(src, signin="f" * 64),
        _with(src, signin="", expires="", signature=""),
    ):
        refused = httpx.get(changed, timeout=10)
        assert refused.status_code == 403 and refused.content != voice, changed
    return asset_id


def _check_bob_sees_nothing_of_hers(
    browser: Browser, running: Running, alice: Page, ids: dict[str, str], asset_id: str
) -> None:
    """Bob: his own first project, nothing of alice's on the page, by link, by search, or through his token."""
    fake_llm, base = running.fake_llm, running.app.base_url
    bob = sign_in(browser, running.app, "bob")
    assert SECRET_WORDS not in bob.content() and "alice-voice" not in bob.content()
    assert MADE_BEFORE not in bob.content()
    assert _ids(bob)["project"] != ids["project"]
    for link in (
        f"/?project={ids['project']}&chat={ids['chat']}",
        f"/?chat={ids['chat']}",
        f"/?project={ids['project']}",
        f"/?project={'0' * 32}&chat={'1' * 32}",  # ids that never existed read the same
    ):
        bob.goto(base + link)
        expect(bob.get_by_text(NOT_FOUND)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(bob.get_by_text("Media library", exact=True)).to_be_visible()
        assert SECRET_WORDS not in bob.content() and "alice-voice" not in bob.content()
        assert _ids(bob)["project"] != ids["project"] and _ids(bob).get("chat") != ids["chat"]
        # no export of anything of hers: no conversation of his open, so nothing to rename, export or delete
        expect(bob.get_by_role("button", name="Rename, export or delete this chat")).to_have_count(0)
    bob.goto(f"{base}/?asset={asset_id}&t=0.5")  # her asset in bob's player: no
    expect(bob.get_by_text("Media library", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(bob.locator("audio[data-asset], video[data-asset]")).to_have_count(0)
    bob.get_by_placeholder("Words from a conversation").fill(SECRET_WORDS)
    bob.get_by_placeholder("Words from a conversation").press("Enter")
    expect(bob.get_by_text("0 conversations with those words")).to_be_visible(timeout=UI_TIMEOUT_MS)
    unsigned = httpx.get(f"{base}/api/media/{asset_id}", timeout=10)
    assert unsigned.status_code == 403

    token = _make_token(bob, "bob's script")
    assert _chat(base, None, {"messages": [{"role": "user", "content": "hi"}]}).status_code == 401  # loopback too
    fake_llm.chat.push(openai_text("Hello Bob."))
    asked = fake_llm.chat.requests[:]
    body = {
        "messages": [{"role": "user", "content": "What is in my project?"}],
        "context": {"projectId": ids["project"]},
    }
    answer = _chat(base, token, body)
    assert answer.status_code == 200 and answer.json()["content"] == "Hello Bob."
    sent = [request for request in fake_llm.chat.requests if request not in asked]
    assert len(sent) == 1 and SECRET_WORDS not in sent[0].body.decode() and "alice-voice" not in sent[0].body.decode()

    # Another site's page cannot act with alice's cookie: its Origin is refused before anything is read.
    before = len(fake_llm.chat.requests)
    cross = _chat(
        base,
        token,
        body,
        Origin="http://localhost:9",
        Cookie="; ".join(f"{cookie['name']}={cookie['value']}" for cookie in cookies_of(alice)),
    )
    assert cross.status_code == 403 and "cross-site" in cross.json()["error"]
    evil = alice.context.new_page()
    evil.goto(f"http://localhost:{running.app.port}/_stcore/health")  # another origin, the same browser and cookies
    evil.evaluate(
        """async ([url, token]) => { try { await fetch(url, { method: "POST", mode: "no-cors",
        credentials: "include", headers: { "Authorization": "Bearer " + token },
        body: JSON.stringify({ messages: [{ role: "user", content: "leak it" }] }) }); } catch (e) {} }""",
        [f"{base}/api/agent/chat", token],
    )
    assert len(fake_llm.chat.requests) == before

    bob.get_by_role("button", name="Revoke").click()
    expect(bob.get_by_role("button", name="Revoke")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    assert _chat(base, token, body).status_code == 401
    alice.reload()  # alice still sees all of hers
    expect(alice.get_by_text(f"The {SECRET_WORDS} keeper speaks.")).to_be_visible(timeout=UI_TIMEOUT_MS)
    for page in (alice, bob, evil):
        page.context.close()


def test_sign_out_is_final_and_a_tampered_or_expired_cookie_is_signed_out(
    browser: Browser, running: Running, tmp_path: Path
) -> None:
    base = running.app.base_url
    alice = sign_in(browser, running.app, "alice")
    copied = cookies_of(alice)
    value = user_cookie(copied)
    if not _media_src_or_none(alice):
        alice.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(make_wav(tmp_path / "v.wav")))
    src = _media_src(alice)
    assert httpx.get(src, timeout=10).status_code == 200

    tampered = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
    for cookies in (replaced_user_cookie(copied, tampered), replaced_user_cookie(copied, signed_long_ago(value, 32))):
        page = with_cookies(browser, cookies, base)
        expect(page.get_by_text(SIGNED_OUT)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text("Media library", exact=True)).to_have_count(0)
        page.context.close()
    fresh = with_cookies(browser, copied, base)  # the untouched copy is still alice, before she signs out
    expect(fresh.get_by_text("Media library", exact=True)).to_be_visible(timeout=UI_TIMEOUT_MS)
    fresh.context.close()

    alice.get_by_role("button", name="Sign out").click()
    alice.get_by_role("button", name="End session").click()  # the provider's own end-of-session form
    expect(alice.get_by_role("button", name="Sign in")).to_be_visible(timeout=UI_TIMEOUT_MS)
    replayed = with_cookies(browser, copied, base)
    expect(replayed.get_by_text(ENDED)).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(replayed.get_by_text("Media library", exact=True)).to_have_count(0)
    refused = httpx.get(src, timeout=10)  # the media URL made for the ended sign-in, within its minutes
    assert refused.status_code == 403 and "ended" in refused.json()["error"]
    for page in (alice, replayed):
        page.context.close()


def _media_src_or_none(page: Page) -> str | None:
    return page.locator("audio[data-asset]").get_attribute("src") if page.locator("audio[data-asset]").count() else None
