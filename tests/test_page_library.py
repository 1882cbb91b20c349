"""The media library with AppTest when it holds more than a page: newest first, paged with Newer/Older,
filtered by name, the player offering what is listed; one upload error at a time, in the app's words."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent_app.storage import SqliteStorage
from agent_app.ui.library_panel import PAGE_SIZE
from tests.media_samples import make_wav
from tests.page_support import configure_env, new_page, texts
from testsupport.media_factory import silent_mp4


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "data"
    configure_env(monkeypatch, directory, None)
    return directory


def seeded_library(data_dir: Path, tmp_path: Path, count: int) -> tuple[str, list[str]]:
    """A project with ``count`` short WAVs named take-01.wav… in upload order: (project id, asset ids)."""
    wav = make_wav(tmp_path / "tone.wav", seconds=0.2).read_bytes()
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Takes")
    ids = [storage.import_asset(project.id, f"take-{n:02d}.wav", io.BytesIO(wav)).id for n in range(1, count + 1)]
    storage.close()
    return project.id, ids


def listed(at: object) -> list[str]:
    return [t.split("**")[1] for t in texts(at.sidebar.markdown) if t.startswith(":material/music_note:")]  # type: ignore[attr-defined]


def test_a_big_library_is_paged_newest_first_and_filtered_by_name(data_dir: Path, tmp_path: Path) -> None:
    project_id, ids = seeded_library(data_dir, tmp_path, 11)
    at = new_page({"project": project_id})
    assert listed(at) == [f"take-{n:02d}.wav" for n in range(11, 11 - PAGE_SIZE, -1)]
    assert "1–8 of 11" in texts(at.sidebar.caption)
    assert at.sidebar.button(key="library_newer").disabled
    assert at.session_state["ws.active_asset_id"] == ids[-1]  # the newest is in the player
    assert at.selectbox(key="player_asset").options == listed(at)  # the player offers what is listed
    at.sidebar.button(key="library_older").click().run()
    assert listed(at) == ["take-03.wav", "take-02.wav", "take-01.wav"] and "9–11 of 11" in texts(at.sidebar.caption)
    assert at.sidebar.button(key="library_older").disabled
    assert at.selectbox(key="player_asset").options[0] == "take-11.wav"  # the one playing stays offered
    at.sidebar.text_input(key="library_filter").set_value("TAKE-1").run()
    assert listed(at) == ["take-11.wav", "take-10.wav"]  # any case; the filter starts at its newest match
    at.sidebar.text_input(key="library_filter").set_value("50%_").run()
    assert listed(at) == [] and "No file name contains “50%_”." in texts(at.sidebar.caption)


def test_one_upload_error_at_a_time_in_the_apps_words(data_dir: Path, tmp_path: Path) -> None:
    at = new_page()
    at.sidebar.file_uploader[0].upload("notes.txt", b"not a video", "text/plain").run()
    assert not at.exception
    errors = texts(at.sidebar.error)
    assert len(errors) == 1 and errors[0].startswith("“notes.txt” is not a supported media file (allowed: ")
    at.sidebar.file_uploader[0].upload("slides.pdf", b"%PDF-1.4", "application/pdf").run()
    errors = texts(at.sidebar.error)
    assert len(errors) == 1 and errors[0].startswith("“slides.pdf” is not a supported media file")


def test_a_video_without_sound_is_told_at_upload_it_cannot_be_transcribed(data_dir: Path, tmp_path: Path) -> None:
    at = new_page()
    silent = silent_mp4(tmp_path / "screen.mp4").read_bytes()
    at.sidebar.file_uploader[0].upload("screen.mp4", silent, "video/mp4").run()
    assert not at.exception
    warned = [text for text in texts(at.sidebar.warning) if "no sound" in text]
    assert warned == ["“screen.mp4” has no sound: it plays, but cannot be transcribed."]
    at.sidebar.file_uploader[0].upload("tone.wav", make_wav(tmp_path / "tone.wav").read_bytes(), "audio/wav").run()
    assert not [text for text in texts(at.sidebar.warning) if "no sound" in text]  # a file with sound: no warning
