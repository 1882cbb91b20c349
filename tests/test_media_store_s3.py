"""Media in an S3-compatible object store (``AGENT_MEDIA_STORE``), against a real SeaweedFS server the suite
starts (``testsupport/seaweedfs_server.py``): uploads go up in parts and read back, the player's presigned URL
answers Range requests and refuses a changed signature, removal deletes the object, transcripts live in the
bucket, and a new machine with an empty disk finds it all. Hostile: an upload cut short by SIGKILL leaves no
object, and a store out of reach is said in words with nothing lost."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import wave
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from agent_app.media import TranscriptionError, saved_transcript, transcribe_asset
from agent_app.settings import Settings
from agent_app.storage import AssetRejectedError, S3Location, S3MediaStore, SqliteStorage, StorageError
from agent_app.storage.media_library import ProjectMediaLibrary
from agent_app.types import AgentContext, ToolEnvironment
from fake_llm import FakeLLMServer, transcription_reply
from tests.media_samples import make_png, make_wav
from testsupport.seaweedfs_server import SeaweedServer
from testsupport.streamlit_server import ROOT, free_port

PART_BYTES = 5 * 1024 * 1024
PREFIX = "deploy/one"


@pytest.fixture
def bucket(seaweedfs: SeaweedServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A bucket of this test's own, and boto3's standard variables pointing at the server."""
    for name, value in seaweedfs.env().items():
        monkeypatch.setenv(name, value)
    return seaweedfs.create_bucket()


def s3_storage(data_dir: Path, bucket: str, endpoint: str, **options: int) -> SqliteStorage:
    store = S3MediaStore(
        S3Location(bucket, PREFIX), data_dir / "staging", endpoint_url=endpoint, url_seconds=120, **options
    )
    return SqliteStorage(data_dir, media_store=store)


@pytest.fixture
def storage(tmp_path: Path, bucket: str, seaweedfs: SeaweedServer) -> Iterator[SqliteStorage]:
    opened = s3_storage(tmp_path / "data", bucket, seaweedfs.endpoint_url, part_bytes=PART_BYTES)
    yield opened
    opened.close()


def test_an_upload_goes_up_in_parts_and_reads_back(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, tmp_path: Path
) -> None:
    wav = make_wav(tmp_path / "long.wav", seconds=360).read_bytes()  # 11.5 MB: three 5 MiB parts
    project = storage.create_project("p")
    asset = storage.import_asset(project.id, "long.wav", io.BytesIO(wav))
    key = f"{PREFIX}/media/{asset.id}.wav"
    assert seaweedfs.object_keys(bucket) == [key]
    head = seaweedfs.client().head_object(Bucket=bucket, Key=key)
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload's ETag counts its parts
    assert head["Metadata"]["sha256"] == hashlib.sha256(wav).hexdigest()
    assert list((tmp_path / "data" / "staging").iterdir()) == []  # the proved copy went up, then away
    with storage.media_file(asset.id) as path:
        assert path is not None and path.read_bytes() == wav
        downloaded = path
    assert not downloaded.exists()  # a temporary download, removed after the block


def _silent_wav(path: Path, megabytes: int) -> Path:
    """A valid WAV of ``megabytes`` of silence, written a megabyte at a time."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        for _ in range(megabytes):
            out.writeframes(bytes(1024 * 1024))
    return path


def test_a_large_upload_never_sits_whole_in_memory(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, tmp_path: Path
) -> None:
    """64 MB through the import: the copy, the probe and the multipart upload hold a few parts at most."""
    source = _silent_wav(tmp_path / "long.wav", 64)
    project = storage.create_project("p")
    tracemalloc.start()
    try:
        with source.open("rb") as handle:
            asset = storage.import_asset(project.id, "long.wav", handle)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert asset.size_bytes == source.stat().st_size
    assert seaweedfs.object_keys(bucket) == [f"{PREFIX}/media/{asset.id}.wav"]
    print(f"64 MB import: peak traced memory {peak / 1e6:.1f} MB")
    assert peak < source.stat().st_size / 2, f"the import held {peak / 1e6:.0f} MB at once"


def test_the_player_reads_a_presigned_url_with_ranges(
    storage: SqliteStorage, seaweedfs: SeaweedServer, tmp_path: Path
) -> None:
    wav = make_wav(tmp_path / "voice.wav", seconds=1).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    url = storage.playback_url(asset.id, asset.mime_type, "http://127.0.0.1:8501/api/media/x")
    assert url is not None and url.startswith(f"{seaweedfs.endpoint_url}/") and "X-Amz-Signature=" in url
    assert storage.playback_url(asset.id, asset.mime_type, None) == url  # the same address across reruns
    part = httpx.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == wav[10:20]
    assert part.headers["content-type"] == "audio/wav"
    assert httpx.get(url.replace("X-Amz-Signature=", "X-Amz-Signature=0")).status_code == 403
    assert httpx.get(url.replace("X-Amz-Expires=120", "X-Amz-Expires=99999")).status_code == 403
    assert httpx.get(url.split("?")[0]).status_code == 403  # nothing is served unsigned


def test_a_presigned_url_is_renewed_at_half_its_life_and_the_old_one_expires(
    tmp_path: Path, bucket: str, seaweedfs: SeaweedServer
) -> None:
    short = S3MediaStore(
        S3Location(bucket, PREFIX), tmp_path / "staging", endpoint_url=seaweedfs.endpoint_url, url_seconds=2
    )
    storage = SqliteStorage(tmp_path / "data", media_store=short)
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    first = storage.playback_url(asset.id, asset.mime_type, None)
    assert first is not None and httpx.get(first).status_code == 200
    deadline = time.monotonic() + 30
    renewed: str | None = first
    while renewed == first and time.monotonic() < deadline:  # a rerun after half the lifetime: a new address
        time.sleep(0.1)
        renewed = storage.playback_url(asset.id, asset.mime_type, None)
    assert renewed != first and renewed is not None
    while httpx.get(first).status_code == 200 and time.monotonic() < deadline:  # the store's clock ends it
        time.sleep(0.2)
    assert httpx.get(first).status_code == 403
    storage.close()


def test_removing_an_asset_deletes_its_object(storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str) -> None:
    wav = make_wav(Path(storage.data_dir) / "voice.wav", seconds=0.5).read_bytes()
    asset = storage.import_asset(storage.create_project("p").id, "voice.wav", io.BytesIO(wav))
    storage.remove_asset(asset.id)
    assert seaweedfs.object_keys(bucket) == []
    assert storage.get_asset(asset.id) is None and not storage.has_media_file(asset.id)


def test_a_refused_upload_leaves_no_object(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, tmp_path: Path
) -> None:
    project = storage.create_project("p")
    with pytest.raises(AssetRejectedError, match="not a readable audio or video file"):
        storage.import_asset(project.id, "photo.mp4", io.BytesIO(make_png(tmp_path / "p.png").read_bytes()))
    with pytest.raises(AssetRejectedError, match="too large"):
        storage.import_asset(project.id, "big.wav", io.BytesIO(b"\0" * 2048), max_bytes=1024)
    assert seaweedfs.object_keys(bucket) == [] and storage.list_assets(project.id) == []
    assert list((tmp_path / "data" / "staging").iterdir()) == []


def _transcription_env(storage: SqliteStorage, project_id: str, fake_llm: FakeLLMServer) -> ToolEnvironment:
    settings = Settings.model_validate(
        {
            "TRANSCRIBE_BACKEND": "openai",
            "TRANSCRIBE_MODEL": "fake-whisper",
            "TRANSCRIBE_API_KEY": "test-key-not-secret",
            "TRANSCRIBE_BASE_URL": fake_llm.openai_base_url,
        }
    )
    return ToolEnvironment(
        context=AgentContext(project_id=project_id),
        media=ProjectMediaLibrary(storage, project_id),
        data_dir=storage.data_dir,
        settings=settings,
    )


def test_transcripts_live_in_the_bucket_and_a_new_disk_finds_them(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The transcription reads the media from the store (a temporary download), its transcript goes to the
    bucket; a machine with an empty disk (a copy of the database only) shows it and asks nobody again."""
    wav = make_wav(tmp_path / "voice.wav", seconds=1).read_bytes()
    project = storage.create_project("p")
    asset = storage.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    fake_llm.transcription.push(transcription_reply("out at sea", [(0.0, 0.9, "out at sea")]))
    transcript, cached = transcribe_asset(_transcription_env(storage, project.id, fake_llm), asset)
    assert not cached and len(fake_llm.transcription.requests) == 1
    assert [segment.text.strip() for segment in transcript.segments] == ["out at sea"]  # the store's file was read
    assert any(key.startswith(f"{PREFIX}/transcripts/") for key in seaweedfs.object_keys(bucket))
    storage.close()

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "agent.sqlite3").write_bytes((tmp_path / "data" / "agent.sqlite3").read_bytes())  # the database only
    elsewhere = s3_storage(fresh, bucket, seaweedfs.endpoint_url)
    assert saved_transcript(ProjectMediaLibrary(elsewhere, project.id), asset.id) == transcript
    again, cached = transcribe_asset(_transcription_env(elsewhere, project.id, fake_llm), asset)
    assert cached and again == transcript and len(fake_llm.transcription.requests) == 1
    elsewhere.close()


class StallingRelay:
    """A TCP relay to the store that stops passing the client's bytes once ``budget`` have gone through: an
    upload hangs mid-way for as long as the test likes, on any machine's speed."""

    def __init__(self, upstream_port: int, budget: int) -> None:
        self.port = free_port()
        self._upstream, self._budget, self._sent = upstream_port, budget, 0
        self._lock = threading.Lock()
        self.holding = threading.Event()
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, counted: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if counted:
                    with self._lock:
                        self._sent += len(chunk)
                        over = self._sent > self._budget
                    if over:
                        self.holding.set()
                        return  # the rest is never passed on: the upload hangs here
                target.sendall(chunk)
        except OSError:
            return

    def close(self) -> None:
        self._server.close()


_CHILD = """
import io, sys
from pathlib import Path
from agent_app.storage import S3Location, S3MediaStore, SqliteStorage
data, bucket, endpoint, project, source = Path(sys.argv[1]), *sys.argv[2:6]
store = S3MediaStore(S3Location(bucket, "deploy/one"), data / "staging", endpoint_url=endpoint, url_seconds=120,
                     part_bytes=5 * 1024 * 1024)
storage = SqliteStorage(data, media_store=store)
storage.import_asset(project, "long.wav", io.BytesIO(Path(source).read_bytes()))
print("imported")
"""


def test_hostile_an_upload_killed_mid_way_leaves_no_object(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, tmp_path: Path
) -> None:
    source = make_wav(tmp_path / "long.wav", seconds=360)
    project = storage.create_project("p")
    relay = StallingRelay(int(seaweedfs.endpoint_url.rsplit(":", 1)[1]), budget=PART_BYTES + PART_BYTES // 2)
    data = str(tmp_path / "data")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, data, bucket, f"http://127.0.0.1:{relay.port}", project.id, str(source)],
        cwd=ROOT,
        env=os.environ.copy(),
    )
    try:
        assert relay.holding.wait(timeout=120), "the upload never reached the store"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        relay.close()
    assert child.returncode == -signal.SIGKILL
    assert seaweedfs.object_keys(bucket) == []  # its parts are no object
    assert seaweedfs.unfinished_uploads(bucket) != []  # it was cut short mid-way, not before it began
    restarted = s3_storage(tmp_path / "data", bucket, seaweedfs.endpoint_url)  # the next start
    assert restarted.list_assets(project.id) == []
    assert list((tmp_path / "data" / "staging").iterdir()) == []  # the dead process's local copy is gone
    assert restarted.media_store.abort_stale_uploads(timedelta(0)) >= 1  # type: ignore[attr-defined]
    assert seaweedfs.unfinished_uploads(bucket) == []
    restarted.close()


def test_hostile_a_store_out_of_reach_is_said_and_loses_nothing(
    storage: SqliteStorage, seaweedfs: SeaweedServer, bucket: str, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    project = storage.create_project("p")
    kept = storage.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    dead_end = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cut_off = s3_storage(tmp_path / "data", bucket, dead_end)
    reached = "the media store at http://127.0.0.1:.* cannot be reached"
    with pytest.raises(StorageError, match=reached):
        cut_off.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    with pytest.raises(StorageError, match=reached):
        cut_off.remove_asset(kept.id)
    with pytest.raises(TranscriptionError, match=reached):
        transcribe_asset(_transcription_env(cut_off, project.id, fake_llm), kept)
    assert [asset.id for asset in cut_off.list_assets(project.id)] == [kept.id]  # nothing lost, nothing half-kept
    assert list((tmp_path / "data" / "staging").iterdir()) == []
    assert seaweedfs.object_keys(bucket) == [f"{PREFIX}/media/{kept.id}.wav"]
    cut_off.close()


def test_hostile_a_store_without_credentials_says_which_to_set(
    seaweedfs: SeaweedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to look for on a test machine
    storage = s3_storage(tmp_path / "data", "any-bucket", seaweedfs.endpoint_url)
    wav = make_wav(tmp_path / "voice.wav", seconds=0.5).read_bytes()
    project = storage.create_project("p")
    with pytest.raises(StorageError, match="no credentials \\(set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        storage.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    assert storage.list_assets(project.id) == []
    storage.close()
