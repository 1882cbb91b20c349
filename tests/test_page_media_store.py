"""The page (AppTest) and the media route with the media in an S3 bucket (SeaweedFS): the player is sent to the
store's presigned URL, and a store out of reach is said in words where it is needed while the rest of the page
works and nothing is lost."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agent_app.routes import media as media_route
from agent_app.settings import load_settings
from agent_app.storage import open_storage
from tests.media_samples import make_wav
from tests.page_support import configure_env, new_page, texts
from testsupport.seaweedfs_server import SeaweedServer
from testsupport.streamlit_server import free_port

PREFIX = "page"


def test_hostile_the_page_says_when_the_media_store_is_out_of_reach_and_loses_nothing(
    seaweedfs: SeaweedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_env(monkeypatch, tmp_path / "data", None)
    for name, value in seaweedfs.env().items():
        monkeypatch.setenv(name, value)
    bucket = seaweedfs.create_bucket()
    monkeypatch.setenv("AGENT_MEDIA_STORE", f"s3://{bucket}/{PREFIX}")
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    storage = open_storage(load_settings())  # as the page opens it
    project = storage.create_project("Harbour")
    asset = storage.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    kept = [f"{PREFIX}/media/{asset.id}.wav"]

    at = new_page({"project": project.id})
    assert texts(at.main.error) == [] and texts(at.main.warning) == []

    dead_end = f"http://127.0.0.1:{free_port()}"  # nothing listens there: the store is out of reach
    monkeypatch.setenv("AGENT_S3_ENDPOINT_URL", dead_end)
    at = new_page({"project": project.id})
    said = f"the media store at {dead_end} cannot be reached"
    assert any(said in text and "voice.wav" in text for text in texts(at.main.error)), texts(at.main.error)
    assert any("voice.wav" in text for text in texts(at.sidebar.markdown))  # the library still lists it
    at.sidebar.file_uploader[0].upload("more.wav", wav[:-2], "audio/wav").run()
    assert not at.exception
    assert any(said in text and "more.wav" in text for text in texts(at.sidebar.error)), texts(at.sidebar.error)

    monkeypatch.setenv("AGENT_S3_ENDPOINT_URL", seaweedfs.endpoint_url)  # back
    at = new_page({"project": project.id})
    assert texts(at.main.error) == []
    assert [listed.id for listed in storage.list_assets(project.id)] == [asset.id]  # nothing half-kept
    assert seaweedfs.object_keys(bucket, f"{PREFIX}/media/") == kept


def test_the_media_route_sends_the_player_to_the_store(
    seaweedfs: SeaweedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An old page (or a bookmark) asking this server for a bucket's media is redirected to a presigned URL."""
    configure_env(monkeypatch, tmp_path / "data", None)
    for name, value in seaweedfs.env().items():
        monkeypatch.setenv(name, value)
    bucket = seaweedfs.create_bucket()
    monkeypatch.setenv("AGENT_MEDIA_STORE", f"s3://{bucket}/{PREFIX}")
    monkeypatch.setattr(media_route, "_mounted", False)  # restored afterwards
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    storage = open_storage(load_settings())
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    app = Starlette(routes=media_route.media_routes())
    with TestClient(app, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 50000)) as http:
        answer = http.get(f"/api/media/{asset.id}", follow_redirects=False)
    assert answer.status_code == 307
    location = answer.headers["location"]
    assert location.startswith(f"{seaweedfs.endpoint_url}/{bucket}/{PREFIX}/media/{asset.id}.wav?")
    assert media_route.media_url(storage, "http://127.0.0.1:8501/", asset) == location  # what the player gets
    assert httpx.get(location, headers={"Range": "bytes=0-3"}).content == wav[:4]
