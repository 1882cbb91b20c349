"""The transcription jobs' store on both backends (ids ``sqlite`` and ``postgres``): one active job per asset,
a job whose lease ran out reads as interrupted and can be taken up again unless a newer job replaced it,
writes fenced by the owner's lease, Stop recorded for the owner to pick up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.runs.models import LeaseLostError
from agent_app.storage import SqliteStorage
from agent_app.transcriptions.models import TranscriptionBusyError
from agent_app.types import now_ms
from tests.media_samples import make_wav
from tests.storage_backends import BACKENDS, Backend, backend_for


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def _asset(storage: SqliteStorage, tmp_path: Path) -> str:
    with make_wav(tmp_path / "a.wav").open("rb") as data:
        return storage.import_asset(storage.create_project("p").id, "a.wav", data).id


def test_one_job_per_asset_and_an_expired_one_is_interrupted_then_taken_up_again(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    store = storage.transcription_store()
    asset = _asset(storage, tmp_path)
    job = store.create(asset, "en", owner="dead", lease_until=now_ms() + 60_000)
    with pytest.raises(TranscriptionBusyError):
        store.create(asset, None, owner="other", lease_until=now_ms() + 60_000)
    assert store.claim(job.id, owner="dead", lease_until=now_ms() + 60_000)
    assert not store.claim(job.id, owner="worker", lease_until=now_ms() + 60_000)  # a live lease: not taken
    store.progress(job.id, "dead", 0.4, "Transcribing")
    with pytest.raises(LeaseLostError):
        store.progress(job.id, "worker", 0.5, "not mine")
    assert store.renew("dead", now_ms() - 1) == 1  # its worker is gone: the lease runs out
    interrupted = store.latest(asset)
    assert interrupted is not None and interrupted.state == "interrupted" and interrupted.fraction == 0.4
    assert store.claim(job.id, owner="worker", lease_until=now_ms() + 60_000)  # taken up again
    assert store.finish(job.id, "worker", "done", None) and not store.finish(job.id, "worker", "error", "late")
    done = store.get(job.id)
    assert done is not None and done.state == "done" and done.fraction == 1.0 and done.owner == "worker"


def test_a_newer_job_keeps_an_interrupted_one_from_being_taken_up_and_stop_reaches_the_owner(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    store = storage.transcription_store()
    asset = _asset(storage, tmp_path)
    old = store.create(asset, None, owner="dead", lease_until=now_ms() - 1)  # already expired
    new = store.create(asset, None, owner="page", lease_until=now_ms() + 60_000, kind="speakers")  # old: interrupted
    assert store.get(old.id).state == "interrupted"  # type: ignore[union-attr]
    assert store.get(old.id).kind == "transcript" and store.latest(asset).kind == "speakers"  # type: ignore[union-attr]
    assert not store.claim(old.id, owner="worker", lease_until=now_ms() + 60_000)  # the newer one holds the asset
    assert store.request_stop(new.id) and store.stop_requested("page") == [new.id]
    assert not store.claim(new.id, owner="worker", lease_until=now_ms() + 60_000)  # stopped before it was taken
