"""``GET /api/media/{asset_id}`` with Starlette's test client: the file, byte ranges, 404s that never
touch a path taken from the URL, and 403 for clients the page does not serve."""

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
    with TestClient(app, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 50000)) as test_client:
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


def test_media_url_only_once_the_route_is_mounted(
    client: tuple[TestClient, SqliteStorage], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, storage = client
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    monkeypatch.setattr(media_route, "_mounted", False)
    assert media_route.media_url(storage, "http://127.0.0.1:8501/", asset) is None
    media_route.media_routes()
    url = media_route.media_url(storage, "http://127.0.0.1:8501/", asset)
    assert url == f"http://127.0.0.1:8501/api/media/{asset.id}"
    assert media_route.media_url(storage, None, asset) is None


@pytest.mark.parametrize(
    ("peer", "headers"),
    [
        (("203.0.113.5", 40000), {}),
        (("127.0.0.1", 40000), {"X-Forwarded-For": "203.0.113.5"}),  # a proxy on this machine forwarded it
        (("127.0.0.1", 40000), {"Host": "rebound.example:8501"}),  # DNS rebinding
    ],
    ids=["remote", "proxied", "rebinding"],
)
def test_media_route_refuses_clients_the_page_does_not_serve_unless_remote_is_allowed(
    client: tuple[TestClient, SqliteStorage],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    peer: tuple[str, int],
    headers: dict[str, str],
) -> None:
    _, storage = client
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    app = Starlette(routes=media_route.media_routes())
    with TestClient(app, base_url="http://127.0.0.1:8501", client=peer) as other:
        refused = other.get(f"/api/media/{asset.id}", headers=headers)
        assert refused.status_code == 403
        assert "AGENT_ALLOW_REMOTE_PAGE" in refused.json()["error"] and refused.content.find(wav[:64]) == -1
        monkeypatch.setenv("AGENT_ALLOW_REMOTE_PAGE", "true")
        allowed = other.get(f"/api/media/{asset.id}", headers=headers)
        assert allowed.status_code == 200 and allowed.content == wav
