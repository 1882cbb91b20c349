"""Starting, stopping and reading the page's transcription jobs: :class:`TranscriptionManager` is the
interface; :class:`ThreadTranscriptionManager` executes on this process's executor (SQLite), and
:class:`~agent_app.transcriptions.queue_manager.QueueTranscriptionManager` defers to the job queue
(PostgreSQL), where Stop is the queue's abort and a job whose worker died is taken up again by another
worker."""

from __future__ import annotations

from typing import Protocol

from agent_app.runs.executor import BoundedExecutor
from agent_app.storage.base import ASSET_GONE, NotFoundError
from agent_app.storage.owned_transcriptions import OwnedTranscriptionStore
from agent_app.transcriptions.execution import TranscriptionExecution, TranscriptionWork
from agent_app.transcriptions.models import JobKind, Transcription
from agent_app.types import now_ms

DEFAULT_MAX_TRANSCRIPTIONS = 2
"""Transcriptions at once in one process: each keeps a core busy."""


class TranscriptionManager(Protocol):
    def start(self, asset_id: str, language: str | None, kind: JobKind = "transcript") -> Transcription:
        """Queue a job of ``kind`` on the asset; :class:`TranscriptionBusyError` while one goes."""
        ...

    def stop(self, transcription_id: str) -> bool: ...

    def latest(self, asset_id: str) -> Transcription | None: ...


class OwnedTranscriptions:
    """The process's ``manager`` as one owner's page may use it (``store``: that owner's view, from
    :meth:`OwnedStorage.transcription_store <agent_app.storage.owned.OwnedStorage.transcription_store>`):
    another owner's asset or job is answered as a missing one, so its progress is not read nor its job stopped."""

    def __init__(self, manager: TranscriptionManager, store: OwnedTranscriptionStore) -> None:
        self._manager = manager
        self._store = store

    def start(self, asset_id: str, language: str | None, kind: JobKind = "transcript") -> Transcription:
        if not self._store.owns_asset(asset_id):
            raise NotFoundError(ASSET_GONE)
        return self._manager.start(asset_id, language, kind)

    def stop(self, transcription_id: str) -> bool:
        return self._store.get(transcription_id) is not None and self._manager.stop(transcription_id)

    def latest(self, asset_id: str) -> Transcription | None:
        return self._store.latest(asset_id)


class StoredTranscriptions:
    """A :class:`TranscriptionManager` on storage; a subclass dispatches the jobs it accepts."""

    def __init__(self, execution: TranscriptionExecution) -> None:
        self.execution = execution
        self.store = execution.store

    def start(self, asset_id: str, language: str | None, kind: JobKind = "transcript") -> Transcription:
        lease_until = now_ms() + self.execution.lease_ms
        job = self.store.create(asset_id, language, owner=self.execution.owner, lease_until=lease_until, kind=kind)
        self._dispatch(job)
        return job

    def stop(self, transcription_id: str) -> bool:
        asked = self.store.request_stop(transcription_id)
        self.execution.cancel(transcription_id)
        return asked

    def latest(self, asset_id: str) -> Transcription | None:
        return self.store.latest(asset_id)

    def close(self) -> None:
        """Start no more jobs (the queue's connections are its run manager's to close)."""
        self.execution.close()

    def _dispatch(self, job: Transcription) -> None:
        raise NotImplementedError


class ThreadTranscriptionManager(StoredTranscriptions):
    """Transcriptions on a bounded executor of this process (SQLite)."""

    def __init__(
        self, execution: TranscriptionExecution, work: TranscriptionWork, max_workers: int = DEFAULT_MAX_TRANSCRIPTIONS
    ) -> None:
        super().__init__(execution)
        self._work = work
        self._executor = BoundedExecutor(max_workers)

    def _dispatch(self, job: Transcription) -> None:
        stop = self.execution.track(job.id)
        self._executor.submit(lambda: self.execution.execute(job, self._work, stop))

    def close(self) -> None:
        """Start no more jobs: the executor's threads end once the queued ones are done (the heartbeat ends
        with the last job)."""
        self._executor.close()
