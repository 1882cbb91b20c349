"""The page and its media on a real non-loopback address (issue 24): ``streamlit run app.py`` listens on every
address of a network namespace of the test's own (see :mod:`tests.test_hostile_remote_route`), with a
conversation and a media file already stored. A browser on this side of the veth pair is another machine:
without ``AGENT_ALLOW_REMOTE_PAGE`` it gets a page saying why and how to allow it, no conversation list and
no input, and the media URL answers 403, even with the route's token configured; a client on the
namespace's own loopback is served as before. With the setting on, the remote browser sees the workspace
with a warning and its question is answered.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from agent_app.ui.page_access import REMOTE_PAGE_WARNING
from tests.browser_failure_report import record_page
from tests.browser_support import UI_TIMEOUT_MS, ask, browser, open_page, screenshot
from tests.media_samples import make_wav
from tests.test_hostile_remote_route import PORT, TOKEN, app_in_namespace, network_namespace, pytestmark
from testsupport.streamlit_server import ROOT

pytestmark = [*pytestmark, pytest.mark.browser]
__all__ = ["browser"]

TITLE = "Secret harbour plan"
REFUSED_TITLE = "Not available from this machine"
LOOPBACK_CLIENT = """
import json, sys, httpx
from tests.page_session import connect_session, run_page
base, asset = sys.argv[1], sys.argv[2]
with connect_session(base) as socket:
    run = run_page(socket)
media = httpx.get(f"{base}/api/media/{asset}", timeout=30)
print(json.dumps({"listed": sys.argv[3] in run.text, "refused": sys.argv[4] in run.text,
                  "media": media.status_code, "size": len(media.content)}))
"""
"""A page session and a media request from inside the namespace, to its own loopback address."""


def stored_workspace(data: Path, tmp_path: Path) -> tuple[str, bytes]:
    """A conversation titled :data:`TITLE` and one media file in ``data``: the asset id and its bytes."""
    storage = SqliteStorage(data)
    try:
        project = storage.create_project("Harbour")
        chat = storage.create_conversation(project.id)
        storage.append_message(chat.id, ChatMessage(role="user", content=TITLE))
        storage.append_message(chat.id, ChatMessage(role="assistant", content="Meet at the pier."))
        wav = make_wav(tmp_path / "voice.wav", seconds=0.3).read_bytes()
        return storage.import_asset(project.id, "voice.wav", io.BytesIO(wav)).id, wav
    finally:
        storage.close()


def from_namespace_loopback(namespace: str, asset_id: str) -> dict[str, object]:
    args = [sys.executable, "-c", LOOPBACK_CLIENT, f"http://127.0.0.1:{PORT}", asset_id, TITLE, REFUSED_TITLE]
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, *args], cwd=ROOT, capture_output=True, text=True, timeout=180, check=True
    )
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_page_and_its_media_serve_another_machine_only_when_the_operator_allows_it(
    browser: Browser, tmp_path: Path
) -> None:
    asset_id, wav = stored_workspace(tmp_path / "data", tmp_path)
    with network_namespace() as (namespace, _, ns_address), httpx.Client(timeout=30) as http:
        base = f"http://{ns_address}:{PORT}"
        with app_in_namespace(namespace, ns_address, tmp_path, token=TOKEN, bind="0.0.0.0"):
            remote = browser.new_page()
            record_page(remote)  # its frames and console in the report of a failed test
            remote.goto(base)
            expect(remote.get_by_text(REFUSED_TITLE)).to_be_visible(timeout=UI_TIMEOUT_MS)
            expect(remote.get_by_text("AGENT_ALLOW_REMOTE_PAGE = true", exact=False)).to_be_visible()
            screenshot(remote, "remote-page-refused.png")
            expect(remote.get_by_text(TITLE)).to_have_count(0)  # no conversation list
            expect(remote.get_by_text("Media library", exact=True)).to_have_count(0)
            expect(remote.get_by_test_id("stChatInput")).to_have_count(0)  # nothing to send with
            remote.close()
            media = http.get(f"{base}/api/media/{asset_id}")
            assert media.status_code == 403 and "AGENT_ALLOW_REMOTE_PAGE" in media.json()["error"]
            assert wav[:64] not in media.content
            ranged = http.get(f"{base}/api/media/{asset_id}", headers={"Range": "bytes=0-99"})
            assert ranged.status_code == 403
            assert from_namespace_loopback(namespace, asset_id) == {
                "listed": True, "refused": False, "media": 200, "size": len(wav),
            }  # fmt: skip

        allowed = {"AGENT_ALLOW_REMOTE_PAGE": "true"}
        with app_in_namespace(namespace, ns_address, tmp_path, token=TOKEN, bind="0.0.0.0", settings=allowed):
            remote = open_page(browser, base)
            expect(remote.get_by_text(REMOTE_PAGE_WARNING)).to_be_visible(timeout=UI_TIMEOUT_MS)
            expect(remote.get_by_text(TITLE).first).to_be_visible(timeout=UI_TIMEOUT_MS)
            ask(remote, "Hello from another machine")
            expect(remote.get_by_text("fake reply")).to_be_visible(timeout=UI_TIMEOUT_MS)
            screenshot(remote, "remote-page-allowed.png")
            remote.close()
            media = http.get(f"{base}/api/media/{asset_id}")
            assert media.status_code == 200 and media.content == wav
