"""The record of a transcription job and the storage interface it lives behind.

Like a run, a transcription is a row, not an object in a thread: its state, progress (``fraction`` 0..1 and
a sentence), Stop request and lease are read the same way by any tab of any process. A job makes the
asset's transcript or its speaker turns (its ``kind``: one executor, one queue task). One active job per
asset is the database's rule (a unique partial index). A job whose lease ran out reads
as ``interrupted``; on the queue, another worker takes it up again (:meth:`TranscriptionStore.claim`).
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeAlias

from agent_app.types import WireModel

TranscriptionState: TypeAlias = Literal["queued", "running", "done", "error", "stopped", "interrupted"]
JobKind: TypeAlias = Literal["transcript", "speakers"]
"""What a job makes: the asset's transcript (Transcribe) or its speaker turns (Find speakers)."""
ACTIVE_TRANSCRIPTION_STATES: tuple[TranscriptionState, ...] = ("queued", "running")
INTERRUPTED_TRANSCRIPTION = "The transcription stopped with its server; press Transcribe to start it again"


class Transcription(WireModel):
    """One transcription job as storage keeps it."""

    id: str
    asset_id: str
    language: str | None = None
    kind: JobKind = "transcript"
    state: TranscriptionState
    fraction: float = 0.0
    message: str = ""
    error: str | None = None
    stop_requested: bool = False
    owner: str = ""
    lease_until: int = 0
    created_at: int
    finished_at: int | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_TRANSCRIPTION_STATES


class TranscriptionBusyError(RuntimeError):
    """The asset has a job going (one at a time: each reads the whole file); the message says so in the
    user's terms."""


TRANSCRIPTION_BUSY = (
    "This file is already being transcribed or its speakers looked for (perhaps in another tab); its progress is "
    "shown here."
)


class TranscriptionStore(Protocol):
    def create(
        self, asset_id: str, language: str | None, *, owner: str, lease_until: int, kind: JobKind = "transcript"
    ) -> Transcription:
        """A new ``queued`` job of ``kind`` (an expired one of the asset is marked interrupted first); raises
        :class:`TranscriptionBusyError` while the asset has a live one."""
        ...

    def get(self, transcription_id: str) -> Transcription | None: ...

    def latest(self, asset_id: str) -> Transcription | None:
        """The asset's newest job (an active one whose lease ran out is marked interrupted on the way)."""
        ...

    def claim(self, transcription_id: str, *, owner: str, lease_until: int) -> bool:
        """Take the job for ``owner``: a queued one, or one whose lease ran out (its worker died) and that no
        newer job of the asset replaced; ``False`` otherwise (stopped, done, running elsewhere)."""
        ...

    def progress(self, transcription_id: str, owner: str, fraction: float, message: str) -> None:
        """Record progress, only while the job is ``owner``'s with a live lease (else ``LeaseLostError``)."""
        ...

    def finish(self, transcription_id: str, owner: str | None, state: TranscriptionState, error: str | None) -> bool:
        """End the job (fenced by ``owner`` when given); ``False`` when it was no longer active, or theirs."""
        ...

    def request_stop(self, transcription_id: str) -> bool: ...

    def stop_requested(self, owner: str) -> list[str]: ...

    def renew(self, owner: str, lease_until: int) -> int:
        """Push the lease of ``owner``'s active jobs whose lease is still live; how many."""
        ...
