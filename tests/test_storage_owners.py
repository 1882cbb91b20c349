"""The ownership contract on both backends (ids ``sqlite`` and ``postgres``): projects belong to an owner (a
sign-in's issuer and subject), an :class:`OwnedStorage` answers another owner's ids exactly as ids that do not
exist, projects made before sign-in go to whoever they are given to, and the account records (sign-ins refused
after sign-out, API token hashes) hold across a second storage opened on the same data."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_app.storage import LOCAL_OWNER, NotFoundError, OwnedStorage, Owner
from agent_app.transcriptions.execution import TranscriptionExecution
from agent_app.transcriptions.manager import OwnedTranscriptions, ThreadTranscriptionManager
from agent_app.types import ChatMessage, now_ms
from tests.media_samples import make_wav
from tests.storage_backends import BACKENDS, AnyStorage, Backend, backend_for, raw_rows

ALICE = Owner(issuer="http://127.0.0.1:1/", subject="alice")
BOB = Owner(issuer="http://127.0.0.1:1/", subject="bob")
ALICE_ELSEWHERE = Owner(issuer="http://127.0.0.2:1/", subject="alice")
"""The same subject at another issuer is another account."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


@pytest.fixture(scope="module")
def sample_wav(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_wav(tmp_path_factory.mktemp("media") / "voice.wav", seconds=0.5).read_bytes()


def _alice_work(storage: AnyStorage, wav: bytes) -> dict[str, str]:
    alice = OwnedStorage(storage, ALICE)
    project = alice.create_project("Alice's film")
    scene = alice.create_scene(project.id, "Opening")
    asset = alice.import_asset(project.id, "voice.wav", io.BytesIO(wav))
    conversation = alice.create_conversation(project.id, "about the secret plan")
    alice.append_message(conversation.id, ChatMessage(id="m1", role="user", content="the secret plan", timestamp=1))
    return {"project": project.id, "scene": scene.id, "asset": asset.id, "conversation": conversation.id}


def test_another_owners_ids_read_as_ids_that_do_not_exist(storage: AnyStorage, sample_wav: bytes) -> None:
    ids = _alice_work(storage, sample_wav)
    bob = OwnedStorage(storage, BOB)
    for view in (bob, OwnedStorage(storage, ALICE_ELSEWHERE), OwnedStorage(storage, LOCAL_OWNER)):
        assert view.list_projects() == []
        assert view.get_project(ids["project"]) is None
        assert view.get_scene(ids["scene"]) is None
        assert view.list_scenes(ids["project"]) == []
        assert view.get_asset(ids["asset"]) is None
        assert not view.has_media_file(ids["asset"])
        assert view.known_hash(ids["asset"]) is None
        assert view.content_hash(ids["asset"]) is None
        assert view.playback_url(ids["asset"], "audio/wav", "http://route") is None
        with view.media_file(ids["asset"]) as path:
            assert path is None
        assert view.asset_project_id(ids["asset"]) is None
        assert view.list_assets(ids["project"]) == []
        assert view.find_assets(ids["project"], limit=10) == []
        assert view.count_assets(ids["project"]) == 0
        assert view.get_conversation(ids["conversation"]) is None
        assert view.list_conversations(ids["project"]) == []
        assert view.search_conversations(ids["project"], ["secret"], limit=10) == []
    writes: dict[str, Callable[[], object]] = {
        "rename_project": lambda: bob.rename_project(ids["project"], "mine now"),
        "create_scene": lambda: bob.create_scene(ids["project"], "x"),
        "rename_scene": lambda: bob.rename_scene(ids["scene"], "x"),
        "import_asset": lambda: bob.import_asset(ids["project"], "v.wav", io.BytesIO(sample_wav)),
        "remove_asset": lambda: bob.remove_asset(ids["asset"]),
        "create_conversation": lambda: bob.create_conversation(ids["project"], "x"),
        "load_messages": lambda: bob.load_messages(ids["conversation"]),
        "count_messages": lambda: bob.count_messages(ids["conversation"]),
        "append_message": lambda: bob.append_message(
            ids["conversation"], ChatMessage(id="m2", role="user", content="hi", timestamp=2)
        ),
        "rename_conversation": lambda: bob.rename_conversation(ids["conversation"], "x"),
        "clear_messages": lambda: bob.clear_messages(ids["conversation"]),
        "delete_conversation": lambda: bob.delete_conversation(ids["conversation"]),
        "delete_project": lambda: bob.delete_project(ids["project"]),
        "chat_persistence": lambda: bob.chat_persistence(ids["conversation"]),
    }
    for write in writes.values():
        with pytest.raises(NotFoundError, match=r"^This .* no longer (exists|in the project)") as refused:
            write()
        assert all(internal not in str(refused.value) for internal in ids.values())  # no internal id
    alice = OwnedStorage(storage, ALICE)  # nothing of alice's changed
    assert [project.name for project in alice.list_projects()] == ["Alice's film"]
    assert [message.content for message in alice.load_messages(ids["conversation"])] == ["the secret plan"]
    assert alice.has_media_file(ids["asset"])
    assert alice.playback_url(ids["asset"], "audio/wav", "http://route") == "http://route"
    with alice.media_file(ids["asset"]) as path:
        assert path is not None and path.read_bytes() == sample_wav
    assert [scene.name for scene in alice.list_scenes(ids["project"])] == ["Opening"]


def test_a_refusal_says_the_same_for_another_owners_id_and_a_missing_one(storage: AnyStorage) -> None:
    project = OwnedStorage(storage, ALICE).create_project("Alice's")
    bob = OwnedStorage(storage, BOB)
    missing = "f" * 32
    with pytest.raises(NotFoundError) as foreign:
        bob.create_conversation(project.id)
    with pytest.raises(NotFoundError) as absent:
        bob.create_conversation(missing)
    assert str(foreign.value).replace(project.id, "ID") == str(absent.value).replace(missing, "ID")


def _same_words(foreign: pytest.ExceptionInfo[NotFoundError], absent: pytest.ExceptionInfo[NotFoundError]) -> bool:
    """The two refusals say the same, and name no id."""
    return str(foreign.value) == str(absent.value) and not re.search("[0-9a-f]{32}", str(foreign.value))


def test_another_owners_transcription_job_reads_and_stops_as_a_missing_one(
    storage: AnyStorage, sample_wav: bytes
) -> None:
    ids = _alice_work(storage, sample_wav)
    alice_jobs = OwnedStorage(storage, ALICE).transcription_store()
    job = alice_jobs.create(ids["asset"], None, owner="alice-page", lease_until=now_ms() + 60_000)
    missing = "f" * 32
    manager = ThreadTranscriptionManager(TranscriptionExecution(storage), lambda job, control: None)
    try:
        for view in (
            OwnedStorage(storage, BOB),
            OwnedStorage(storage, ALICE_ELSEWHERE),
            OwnedStorage(storage, LOCAL_OWNER),
        ):
            store = view.transcription_store()
            page = OwnedTranscriptions(manager, store)
            assert store.latest(ids["asset"]) is None and page.latest(ids["asset"]) is None
            assert store.get(job.id) is None
            assert not page.stop(job.id) and not store.request_stop(job.id)
            assert not store.claim(job.id, owner="thief", lease_until=now_ms() + 60_000)
            assert not store.finish(job.id, None, "stopped", None)
            assert store.stop_requested("alice-page") == []
            for kind in ("transcript", "speakers"):
                with pytest.raises(NotFoundError) as foreign:
                    page.start(ids["asset"], None, kind)
                with pytest.raises(NotFoundError) as absent:
                    page.start(missing, None, kind)
                assert _same_words(foreign, absent)
            with pytest.raises(NotFoundError) as foreign:
                store.create(ids["asset"], None, owner="thief", lease_until=now_ms() + 60_000)
            assert _same_words(foreign, absent)
            with pytest.raises(NotFoundError) as foreign:
                store.progress(job.id, "alice-page", 0.5, "read")
            with pytest.raises(NotFoundError) as absent:
                store.progress(missing, "alice-page", 0.5, "read")
            assert _same_words(foreign, absent)
        untouched = storage.transcription_store().get(job.id)
        assert untouched is not None and untouched.state == "queued" and not untouched.stop_requested
        alice = OwnedTranscriptions(manager, alice_jobs)
        mine = alice.latest(ids["asset"])
        assert mine is not None and mine.id == job.id
        assert alice.stop(job.id)
        assert alice_jobs.stop_requested("alice-page") == [job.id]
    finally:
        manager.close()


def test_projects_made_before_sign_in_go_to_the_owner_they_are_given_to(backend: Backend) -> None:
    storage = backend.open()
    before = storage.create_project("Made before sign-in")
    assert [project.id for project in storage.list_projects()] == [before.id]  # LOCAL_OWNER's, as today
    alice = OwnedStorage(storage, ALICE)
    assert alice.list_projects() == []
    assert alice.give_unowned_projects(ALICE) == 1
    assert [project.id for project in alice.list_projects()] == [before.id]
    assert OwnedStorage(backend.open(), ALICE).get_project(before.id) is not None  # stored, not cached
    assert storage.list_projects() == []
    assert OwnedStorage(storage, BOB).give_unowned_projects(BOB) == 0  # given once: nothing left for bob
    assert raw_rows(backend, "SELECT owner_issuer, owner_subject FROM projects") == [(ALICE.issuer, ALICE.subject)]


def test_a_sign_in_is_refused_after_sign_out_by_every_storage_on_the_data(backend: Backend) -> None:
    first, second = backend.open().accounts(), backend.open().accounts()  # two replicas
    assert first.sign_in_active("sign-in-1", ALICE)
    assert second.sign_in_active("sign-in-1", ALICE)  # the same cookie seen again: still signed in
    assert not second.sign_in_active("sign-in-1", BOB)  # a record of alice's is not bob's
    first.end_sign_in("sign-in-1", ALICE)
    assert not second.sign_in_active("sign-in-1", ALICE)  # the replayed cookie
    assert not first.sign_in_active("sign-in-1", ALICE)
    assert second.sign_in_active("sign-in-2", ALICE)  # signing in again is a new sign-in
    second.end_sign_in("never-seen", ALICE)  # signed out before this replica recorded it: refused too
    assert not first.sign_in_active("never-seen", ALICE)


def test_api_tokens_are_kept_as_hashes_per_owner_and_revoked_for_good(backend: Backend) -> None:
    accounts = backend.open().accounts()
    token = accounts.add_api_token(ALICE, "  laptop  script ", "hash-1")
    assert token.name == "laptop script"
    accounts.add_api_token(BOB, "bob's", "hash-2")
    assert [listed.id for listed in accounts.list_api_tokens(ALICE)] == [token.id]
    assert accounts.api_token_owner("hash-1") == ALICE
    assert accounts.api_token_owner("hash-2") == BOB
    assert accounts.api_token_owner("hash-3") is None
    with pytest.raises(NotFoundError):
        accounts.revoke_api_token(BOB, token.id)  # not bob's to revoke
    assert backend.open().accounts().api_token_owner("hash-1") == ALICE
    accounts.revoke_api_token(ALICE, token.id)
    assert backend.open().accounts().api_token_owner("hash-1") is None
    assert accounts.list_api_tokens(ALICE) == []
    with pytest.raises(NotFoundError):
        accounts.revoke_api_token(ALICE, token.id)  # revoked once
    assert raw_rows(backend, "SELECT token_hash FROM api_tokens ORDER BY token_hash") == [("hash-1",), ("hash-2",)]
