"""The address brings back what a user expects after a reload or from a shared link: project, chat, the
active scene, the asset in the player and the playhead (AppTest)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent_app.storage import SqliteStorage
from tests.media_samples import make_wav
from tests.page_support import configure_env, new_page


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "data"
    configure_env(monkeypatch, directory, None)
    return directory


def test_the_link_restores_scene_asset_and_playhead(data_dir: Path, tmp_path: Path) -> None:
    wav = make_wav(tmp_path / "tone.wav", seconds=3.0).read_bytes()
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Harbour")
    intro, outro = (storage.create_scene(project.id, name) for name in ("Intro", "Outro"))
    first, _newest = (storage.import_asset(project.id, n, io.BytesIO(wav)) for n in ("first.wav", "newest.wav"))
    other = storage.create_project("Other")
    foreign = storage.import_asset(other.id, "foreign.wav", io.BytesIO(wav))

    at = new_page({"project": project.id, "scene": outro.id, "asset": first.id, "t": "2.146"})
    assert at.session_state["ws.scene_id"] == outro.id
    assert at.session_state["ws.active_asset_id"] == first.id  # not the newest, which a fresh visit shows
    assert at.session_state["ws.playhead_ms"] == 2146
    assert at.number_input(key="player_playhead_s").value == pytest.approx(2.146)
    assert dict(at.query_params) == {"project": project.id, "scene": outro.id, "asset": first.id, "t": "2.146"}

    at.sidebar.radio(key="sidebar_scene").set_value(intro.id).run()  # the address follows the page
    assert at.query_params["scene"] == intro.id

    stale = new_page({"project": project.id, "scene": "nope", "asset": foreign.id, "t": "nan"})
    assert stale.session_state["ws.active_asset_id"] != foreign.id  # another project's asset is not opened
    assert stale.session_state["ws.playhead_ms"] == 0 and "t" not in stale.query_params
