"""Issue 9 item 5 and the full-disk class for uploads, through the page's real uploader (AppTest).

A valid file with a very long name keeps its extension; a NUL (and other bad characters) in a name gets
a clear message, no traceback; a write failure (a real full tmpfs) never shows a server path, leaves no
``.part`` file and nothing in the database, and the same upload works once there is room; a 15 KB WAV
whose header declares hundreds of hours is listed with an unknown duration.
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest

from agent_app.storage import SqliteStorage
from fake_llm import FakeLLMServer
from tests.hostile_support import close_connections_to, fill, requires_root, set_read_only, tmpfs
from tests.media_samples import make_wav
from tests.page_support import configure_env, new_page, texts
from testsupport.media_factory import MediaFile, tone_track


@pytest.fixture(scope="module")
def wav(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_wav(tmp_path_factory.mktemp("uploads") / "voice.wav", seconds=0.3).read_bytes()


def _stored_names(data_dir: Path) -> list[str]:
    storage = SqliteStorage(data_dir)
    try:
        return [asset.name for project in storage.list_projects() for asset in storage.list_assets(project.id)]
    finally:
        storage.close()


def _page_text(at: object) -> str:
    parts = [texts(at.sidebar.error), texts(at.sidebar.success), texts(at.sidebar.info), texts(at.sidebar.markdown)]  # type: ignore[attr-defined]
    return "\n".join(text for part in parts for text in part)


LONG_STEMS = [
    "x" * 250,
    "interview " * 40,
    "é" * 300,
    "a.b." * 80,  # dots inside the stem
]


@pytest.mark.parametrize("stem", LONG_STEMS, ids=["ascii", "words", "accents", "dots"])
def test_a_long_file_name_keeps_its_extension(
    stem: str, wav: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    data_dir = tmp_path / "data"
    configure_env(monkeypatch, data_dir, fake_llm)
    at = new_page()
    at.sidebar.file_uploader[0].upload(f"{stem}.wav", wav, "audio/wav").run()
    assert not at.exception and not at.sidebar.error, texts(at.sidebar.error)
    [name] = _stored_names(data_dir)
    assert name.endswith(".wav") and len(name) <= 200
    assert name.startswith(" ".join(stem.split())[:50])


BAD_NAMES = ["clip\x00.wav", "\x00", "clip.wav\x00.exe", "\x00\x00\x00.wav", "a\x00/../../etc/passwd", "..\x00.wav"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=range(len(BAD_NAMES)))
def test_a_nul_in_a_file_name_gets_a_clear_message_not_a_traceback(
    name: str, wav: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    data_dir = tmp_path / "data"
    configure_env(monkeypatch, data_dir, fake_llm)
    at = new_page()
    at.sidebar.file_uploader[0].upload(name, wav, "audio/wav").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _page_text(at)
    assert "\x00" not in shown and "Traceback" not in shown
    stored = _stored_names(data_dir)
    if stored:  # the NUL is removed and what is left is a fine name: stored under it
        assert all("\x00" not in n and n.endswith(".wav") for n in stored)
        assert texts(at.sidebar.success)
    else:
        [error] = texts(at.sidebar.error)
        assert "not a supported media file" in error
    assert [p.name for p in (data_dir / "media").iterdir() if p.suffix == ".part"] == []


def _wav_declaring(hours: float, payload_bytes: int) -> bytes:
    """A WAV (1 kHz, 8-bit mono: 1,000 bytes a second) whose header declares ``hours`` of audio."""
    rate, declared = 1000, int(hours * 3600 * 1000)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    header = b"RIFF" + struct.pack("<I", min(declared + 36, 0xFFFFFFFF)) + b"WAVE"
    header += b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", min(declared, 0xFFFFFFFF))
    return header + bytes((128 + (i % 40) - 20) & 0xFF for i in range(payload_bytes))


def _mp3_declaring(hours: float, tmp_path: Path) -> bytes:
    """A real 3 s MP3 whose Xing/Info header claims enough frames for ``hours`` (FFmpeg believes it)."""
    path = MediaFile(tone_track(3000, 500), 16_000, codec="libmp3lame").write(tmp_path / "src.mp3")
    data = bytearray(path.read_bytes())
    header = max(data.find(b"Xing"), data.find(b"Info"))
    assert header > 0
    struct.pack_into(">I", data, header + 8, int(hours * 3600 * 16_000 / 1152))
    return bytes(data)


def test_a_duration_the_file_cannot_hold_is_shown_as_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    data_dir = tmp_path / "data"
    configure_env(monkeypatch, data_dir, fake_llm)
    at = new_page()
    liar = _mp3_declaring(1193.05, tmp_path)
    assert len(liar) < 30_000
    at.sidebar.file_uploader[0].upload("liar.mp3", liar, "audio/mpeg").run()
    assert not at.exception
    [success] = texts(at.sidebar.success)
    assert "(–)" in success, success  # unknown, not hundreds of hours
    storage = SqliteStorage(data_dir)
    try:
        [asset] = [a for p in storage.list_projects() for a in storage.list_assets(p.id)]
    finally:
        storage.close()
    assert asset.duration_ms is None
    honest = _wav_declaring(15_000 / 1000 / 3600, 15_000)  # 15 s declared, 15 s there
    at.sidebar.file_uploader[0].upload("honest.wav", honest, "audio/wav").run()
    assert "0:15" in "\n".join(texts(at.sidebar.success))


@requires_root
@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_an_upload_to_a_full_or_read_only_disk_shows_no_path_leaves_nothing_and_works_after(
    fault: str, wav: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    with tmpfs(tmp_path / "disk", 2048) as mount:
        data_dir = mount / "data"
        configure_env(monkeypatch, data_dir, fake_llm)
        at = new_page()
        if fault == "full":
            filler = fill(mount)
        else:
            close_connections_to(data_dir)
            set_read_only(mount, True)
        at.sidebar.file_uploader[0].upload("voice.wav", wav, "audio/wav").run()
        assert not at.exception, [e.value for e in at.exception]
        [error] = texts(at.sidebar.error)
        assert "could not be stored" in error and "voice.wav" in error
        assert str(mount) not in error and ".part" not in error and "/" not in error.replace("voice.wav", "")
        assert [p.name for p in (data_dir / "media").iterdir()] == []
        if fault == "full":
            filler.unlink()
        else:
            set_read_only(mount, False)
        assert _stored_names(data_dir) == []
        at.sidebar.file_uploader[0].upload("voice-again.wav", wav, "audio/wav").run()
        assert not at.sidebar.error and _stored_names(data_dir) == ["voice-again.wav"]


def test_partial_uploads_of_dead_processes_are_removed_at_start_and_live_ones_kept(tmp_path: Path) -> None:
    media = tmp_path / "data" / "media"
    media.mkdir(parents=True)
    ended = subprocess.Popen(["true"])
    ended.wait()  # reaped: its PID runs nothing now
    dead_pid = ended.pid
    names = {
        "own": f"{'a' * 32}.mp4.{os.getpid()}.part",
        "live": f"{'b' * 32}.mp4.{os.getppid()}.part",
        "dead": f"{'c' * 32}.mp4.{dead_pid}.part",
        "old-style": f"{'d' * 32}.mp4.part",
        "not-a-part": f"{'e' * 32}.mp4",
    }
    for name in names.values():
        (media / name).write_bytes(b"x")
    SqliteStorage(tmp_path / "data").close()
    left = sorted(p.name for p in media.iterdir())
    assert left == sorted([names["own"], names["live"], names["not-a-part"]]), left


@requires_root
def test_storage_opens_on_a_read_only_folder_holding_a_stale_part(tmp_path: Path) -> None:
    """The stale-part sweep at start never makes a read-only data folder fatal: it waits for a writable one."""
    with tmpfs(tmp_path / "disk", 2048) as mount:
        data_dir = mount / "data"
        storage = SqliteStorage(data_dir)
        project = storage.create_project("kept")
        storage.close()
        stale = data_dir / "media" / f"{'f' * 32}.mp4.part"
        stale.write_bytes(b"x")
        set_read_only(mount, True)
        reader = SqliteStorage(data_dir)
        assert [p.name for p in reader.list_projects()] == ["kept"] and stale.exists()
        reader.close()
        set_read_only(mount, False)
        SqliteStorage(data_dir).close()
        assert not stale.exists() and project.id
