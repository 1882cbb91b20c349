"""``GET /api/media/{asset_id}`` with Starlette's test client: the file, byte ranges, and 404s that never
touch a path taken from the URL."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agent_app.routes import media as media_route
from agent_app.storage import SqliteStorage
from tests.media_samples import make_wav


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, SqliteStorage]]:
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(media_route, "_mounted", False)  # restored afterwards: other tests run without the route
    storage = SqliteStorage(tmp_path / "data")
    app = Starlette(routes=media_route.media_routes())
    with TestClient(app) as test_client:
        yield test_client, storage
    storage.close()


def test_media_route_serves_the_file_with_ranges(client: tuple[TestClient, SqliteStorage], tmp_path: Path) -> None:
    http, storage = client
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    whole = http.get(f"/api/media/{asset.id}")
    assert whole.status_code == 200
    assert whole.content == wav
    assert whole.headers["content-type"].startswith("audio/wav")
    part = http.get(f"/api/media/{asset.id}", headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == wav[10:20]


@pytest.mark.parametrize("asset_id", ["0" * 32, "..%2F..%2Fagent.sqlite3", "not-an-id"])
def test_media_route_answers_404_for_unknown_ids(client: tuple[TestClient, SqliteStorage], asset_id: str) -> None:
    http, _ = client
    response = http.get(f"/api/media/{asset_id}")
    assert response.status_code == 404
    assert b"SQLite" not in response.content


def test_media_route_names_a_mistyped_busy_timeout(
    client: tuple[TestClient, SqliteStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route opens storage like the page does, so it honours AGENT_DB_BUSY_TIMEOUT_MS and says when it is wrong."""
    http, _ = client
    monkeypatch.setenv("AGENT_DB_BUSY_TIMEOUT_MS", "soon")
    response = http.get(f"/api/media/{'0' * 32}")
    assert response.status_code == 503
    assert response.json() == {"error": "Setting AGENT_DB_BUSY_TIMEOUT_MS must be an integer (milliseconds), 0 or more"}


def test_media_url_only_once_the_route_is_mounted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(media_route, "_mounted", False)
    assert media_route.media_url("http://127.0.0.1:8501/", "a" * 32) is None
    media_route.media_routes()
    assert media_route.media_url("http://127.0.0.1:8501/", "a" * 32) == f"http://127.0.0.1:8501/api/media/{'a' * 32}"
    assert media_route.media_url(None, "a" * 32) is None
