"""One owner's view of the transcription jobs' store: what :meth:`OwnedStorage.transcription_store
<agent_app.storage.owned.OwnedStorage.transcription_store>` hands the page, so a signed-in user who knows
another owner's asset id (or job id) can neither read that job's progress nor stop it.

A job belongs to whoever owns its asset. Another owner's asset or job reads exactly as a missing one: ``None``
or ``False`` from a read or Stop, :class:`~agent_app.storage.base.NotFoundError` with the same words from a
new job. The worker's side (claim, fenced progress and end, leases) works on the unfiltered store, as it
serves every owner.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_app.storage.base import ASSET_GONE, NotFoundError
from agent_app.transcriptions.models import JobKind, Transcription, TranscriptionState, TranscriptionStore

TRANSCRIPTION_GONE = "This transcription no longer exists"


class OwnedTranscriptionStore:
    """``store`` as the owner of the assets ``owns_asset`` accepts may see it."""

    def __init__(self, store: TranscriptionStore, owns_asset: Callable[[str], bool]) -> None:
        self.inner = store
        self.owns_asset = owns_asset

    def _visible(self, job: Transcription | None) -> Transcription | None:
        return job if job is not None and self.owns_asset(job.asset_id) else None

    def create(
        self, asset_id: str, language: str | None, *, owner: str, lease_until: int, kind: JobKind = "transcript"
    ) -> Transcription:
        if not self.owns_asset(asset_id):
            raise NotFoundError(ASSET_GONE)
        return self.inner.create(asset_id, language, owner=owner, lease_until=lease_until, kind=kind)

    def get(self, transcription_id: str) -> Transcription | None:
        return self._visible(self.inner.get(transcription_id))

    def latest(self, asset_id: str) -> Transcription | None:
        return self.inner.latest(asset_id) if self.owns_asset(asset_id) else None

    def claim(self, transcription_id: str, *, owner: str, lease_until: int) -> bool:
        if self.get(transcription_id) is None:
            return False
        return self.inner.claim(transcription_id, owner=owner, lease_until=lease_until)

    def progress(self, transcription_id: str, owner: str, fraction: float, message: str) -> None:
        if self.get(transcription_id) is None:
            raise NotFoundError(TRANSCRIPTION_GONE)
        self.inner.progress(transcription_id, owner, fraction, message)

    def finish(self, transcription_id: str, owner: str | None, state: TranscriptionState, error: str | None) -> bool:
        return self.get(transcription_id) is not None and self.inner.finish(transcription_id, owner, state, error)

    def request_stop(self, transcription_id: str) -> bool:
        return self.get(transcription_id) is not None and self.inner.request_stop(transcription_id)

    def stop_requested(self, owner: str) -> list[str]:
        return [job for job in self.inner.stop_requested(owner) if self.get(job) is not None]

    def renew(self, owner: str, lease_until: int) -> int:
        """The lease holder's renewal: leases are the worker's, named by its own token, not by an asset."""
        return self.inner.renew(owner, lease_until)


def _is_store(view: OwnedTranscriptionStore) -> TranscriptionStore:
    """The view is a whole :class:`TranscriptionStore` (mypy checks this line)."""
    return view
