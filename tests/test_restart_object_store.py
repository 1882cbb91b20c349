"""A deploy that keeps its data: the app restarted on a new, empty local disk, with the same PostgreSQL database
and S3 bucket (SeaweedFS), shows every project, conversation, asset (playable in Chromium, from the store's
presigned URL) and transcript, as a replaced Community Cloud container would."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, expect

from agent_app.media.transcript_cache import CacheKey
from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.storage import PostgresStorage, S3Location, S3MediaStore
from fake_llm import FakeLLMServer, openai_text
from tests.browser_support import UI_TIMEOUT_MS, app_env, ask, browser, open_page, screenshot
from tests.media_samples import make_video
from testsupport.seaweedfs_server import SeaweedServer
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

QUESTION = "Which shot opens the harbour scene?"
ANSWER = "The lighthouse at dawn opens it."
SAID = "the fishing boats leave the harbour at first light"
PREFIX = "shell"


def _seed(data_dir: Path, database_url: str, bucket: str, endpoint: str, clip: Path) -> tuple[str, str, str]:
    """Two projects, a clip in the first with its transcript in the bucket, written as the app writes them:
    (first project id, second project id, asset id)."""
    store = S3MediaStore(S3Location(bucket, PREFIX), data_dir / "staging", endpoint_url=endpoint, url_seconds=600)
    storage = PostgresStorage(data_dir, database_url, media_store=store)
    try:
        harbour, other = storage.create_project("Harbour film"), storage.create_project("Market film")
        with clip.open("rb") as handle:
            asset = storage.import_asset(harbour.id, "harbour.mp4", handle)
        digest = storage.content_hash(asset.id)
        assert digest is not None
        transcript = Transcript(
            duration_ms=3000,
            language="en",
            segments=[TranscriptSegment(start_ms=0, end_ms=2800, text=f"And {SAID}.")],
            backend="openai",
            model="fake-whisper",
        )
        storage.transcripts().put(CacheKey(digest, transcript.backend, transcript.model), transcript, asset.id)
    finally:
        storage.close_pool()
    return harbour.id, other.id, asset.id


@pytest.fixture
def store(seaweedfs: SeaweedServer, monkeypatch: pytest.MonkeyPatch) -> SeaweedServer:
    """The session's S3 server, reached from this process as the app reaches it: boto3's standard variables."""
    for name, value in seaweedfs.env().items():
        monkeypatch.setenv(name, value)
    return seaweedfs


def test_restart_on_an_empty_disk_with_the_same_database_and_bucket_shows_everything(
    browser: Browser, fake_llm: FakeLLMServer, store: SeaweedServer, postgres_url: str, tmp_path: Path
) -> None:
    seaweedfs = store
    bucket = seaweedfs.create_bucket()
    first_disk, second_disk = tmp_path / "disk-one", tmp_path / "disk-two"
    clip = make_video(tmp_path / "harbour.mp4", seconds=3)
    harbour, market, asset_id = _seed(first_disk, postgres_url, bucket, seaweedfs.endpoint_url, clip)

    def env(disk: Path) -> dict[str, str]:
        return {
            **app_env(fake_llm, disk),
            **seaweedfs.env(),
            "AGENT_DATABASE_URL": postgres_url,
            "AGENT_MEDIA_STORE": f"s3://{bucket}/{PREFIX}",
        }

    fake_llm.chat.push(openai_text(ANSWER))
    with run_streamlit(env(first_disk), tmp_path) as first:
        page = open_page(browser, f"{first.base_url}/?project={harbour}&asset={asset_id}")
        ask(page, QUESTION)
        # Once: while the page redraws for the run's end, the live answer stays until the stored one is drawn.
        expect(page.get_by_text(ANSWER)).to_have_count(1, timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text(ANSWER)).to_be_visible()
        query = urlsplit(page.url).query
    assert "chat=" in query

    second_disk.mkdir()  # a new machine: nothing of the first disk
    with run_streamlit(env(second_disk), tmp_path) as second:
        page.goto(f"{second.base_url}/?{query}")
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.get_by_text(QUESTION).first).to_be_visible()
        expect(page.get_by_text(SAID, exact=False).first).to_be_visible(timeout=UI_TIMEOUT_MS)  # the transcript
        video = page.locator("video")
        expect(video).to_have_count(1)
        assert (video.get_attribute("src") or "").startswith(f"{seaweedfs.endpoint_url}/{bucket}/{PREFIX}/media/")
        page.wait_for_function("el => el.readyState >= 1 && Math.round(el.duration) === 3", arg=video.element_handle())
        page.evaluate("el => { el.muted = true; return el.play(); }", video.element_handle())
        page.wait_for_function("el => el.currentTime > 0.2", arg=video.element_handle())  # it plays
        screenshot(page, "restart-object-store.png")
        page.goto(f"{second.base_url}/?project={market}")
        expect(page.get_by_role("heading", name="Market film")).to_be_visible(timeout=UI_TIMEOUT_MS)
    kept_here = [path for path in second_disk.rglob("*") if path.is_file() and path.suffix in {".mp4", ".part"}]
    assert kept_here == []  # the clip was played from the bucket, never copied to this disk
    assert len(fake_llm.chat.requests) == 1  # reopening asked the model nothing
