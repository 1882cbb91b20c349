"""Transcription jobs (:class:`~agent_app.transcriptions.models.TranscriptionStore`) in either database: the
statements are the same on SQLite and PostgreSQL but for the placeholder, so one implementation serves both,
handed each backend's read and write transactions."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from agent_app.runs.models import LeaseLostError
from agent_app.transcriptions.models import (
    INTERRUPTED_TRANSCRIPTION,
    TRANSCRIPTION_BUSY,
    JobKind,
    Transcription,
    TranscriptionBusyError,
    TranscriptionState,
)
from agent_app.types import new_id, now_ms

Transaction = Callable[[], contextlib.AbstractContextManager[Any]]
_ACTIVE = "state IN ('queued', 'running')"
_END = "state = ?, error = ?, finished_at = ?, fraction = COALESCE(?, fraction)"
_COLUMNS = (
    "id, asset_id, language, kind, state, fraction, message, error, stop_requested, owner, lease_until, created_at,"
    " finished_at"
)


class _TakenError(Exception):
    """A newer job of the asset holds the index: the old one is not taken up again."""


class SqlTranscriptionStore:
    """The transcription store of one database; ``placeholder`` is its parameter mark (``?`` or ``%s``) and
    ``unique_violation`` the exception its driver raises for the one-active-job index."""

    def __init__(
        self, read: Transaction, write: Transaction, placeholder: str, unique_violation: type[Exception]
    ) -> None:
        self._read = read
        self._write = write
        self._mark = placeholder
        self._unique = unique_violation

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._mark)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Callable[..., Any]]:
        with self._write() as db:
            yield lambda statement, params=(): db.execute(self._sql(statement), params)

    def _one(self, statement: str, params: tuple[Any, ...]) -> Transcription | None:
        with self._read() as db:
            row = db.execute(self._sql(statement), params).fetchone()
        return None if row is None else Transcription.model_validate(dict(row))

    def create(
        self, asset_id: str, language: str | None, *, owner: str, lease_until: int, kind: JobKind = "transcript"
    ) -> Transcription:
        job = Transcription(
            id=new_id(), asset_id=asset_id, language=language, kind=kind, state="queued", owner=owner,
            lease_until=lease_until, created_at=now_ms(),
        )  # fmt: skip
        with self._writing() as execute:
            self._interrupt_expired(execute, asset_id)
            try:
                execute(
                    "INSERT INTO transcriptions (id, asset_id, language, kind, state, owner, lease_until,"
                    " created_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)",
                    (job.id, asset_id, language, kind, owner, lease_until, job.created_at),
                )
            except self._unique:
                raise TranscriptionBusyError(TRANSCRIPTION_BUSY) from None
        return job

    @staticmethod
    def _interrupt_expired(execute: Callable[..., Any], asset_id: str) -> None:
        now = now_ms()
        execute(
            f"UPDATE transcriptions SET state = 'interrupted', error = ?, finished_at = ?"  # noqa: S608 - constants
            f" WHERE asset_id = ? AND {_ACTIVE} AND lease_until < ?",
            (INTERRUPTED_TRANSCRIPTION, now, asset_id, now),
        )

    def get(self, transcription_id: str) -> Transcription | None:
        return self._one(f"SELECT {_COLUMNS} FROM transcriptions WHERE id = ?", (transcription_id,))  # noqa: S608

    def latest(self, asset_id: str) -> Transcription | None:
        statement = f"SELECT {_COLUMNS} FROM transcriptions WHERE asset_id = ? ORDER BY created_at DESC LIMIT 1"  # noqa: S608
        job = self._one(statement, (asset_id,))
        if job is not None and job.active and job.lease_until < now_ms():
            with self._writing() as execute:
                self._interrupt_expired(execute, asset_id)
            job = self.get(job.id)
        return job

    def claim(self, transcription_id: str, *, owner: str, lease_until: int) -> bool:
        try:
            with self._writing() as execute:
                try:
                    cursor = execute(
                        "UPDATE transcriptions SET state = 'running', owner = ?, lease_until = ?, error = NULL,"
                        " finished_at = NULL WHERE id = ? AND stop_requested = FALSE AND (state = 'queued'"
                        " OR (state = 'running' AND lease_until < ?) OR (state = 'interrupted' AND error = ?))",
                        (owner, lease_until, transcription_id, now_ms(), INTERRUPTED_TRANSCRIPTION),
                    )
                except self._unique:
                    raise _TakenError from None
        except _TakenError:
            return False
        return bool(cursor.rowcount == 1)

    def progress(self, transcription_id: str, owner: str, fraction: float, message: str) -> None:
        with self._writing() as execute:
            cursor = execute(
                f"UPDATE transcriptions SET fraction = ?, message = ? WHERE id = ? AND owner = ? AND {_ACTIVE}"  # noqa: S608
                " AND lease_until >= ?",
                (min(1.0, max(0.0, fraction)), message, transcription_id, owner, now_ms()),
            )
            if cursor.rowcount != 1:
                raise LeaseLostError(f"Transcription {transcription_id} is no longer {owner}'s")

    def finish(self, transcription_id: str, owner: str | None, state: TranscriptionState, error: str | None) -> bool:
        now = now_ms()
        done = 1.0 if state == "done" else None
        fence, fenced = ("", ()) if owner is None else (" AND owner = ? AND lease_until >= ?", (owner, now))
        with self._writing() as execute:
            statement = f"UPDATE transcriptions SET {_END} WHERE id = ? AND {_ACTIVE}{fence}"  # noqa: S608 - constants
            cursor = execute(statement, (state, error, now, done, transcription_id, *fenced))
        return bool(cursor.rowcount == 1)

    def request_stop(self, transcription_id: str) -> bool:
        with self._writing() as execute:
            cursor = execute(
                f"UPDATE transcriptions SET stop_requested = TRUE WHERE id = ? AND {_ACTIVE}",  # noqa: S608
                (transcription_id,),
            )
        return bool(cursor.rowcount == 1)

    def stop_requested(self, owner: str) -> list[str]:
        with self._read() as db:
            rows = db.execute(
                self._sql(f"SELECT id FROM transcriptions WHERE owner = ? AND {_ACTIVE} AND stop_requested"),  # noqa: S608
                (owner,),
            ).fetchall()
        return [str(row["id"]) for row in rows]

    def renew(self, owner: str, lease_until: int) -> int:
        with self._writing() as execute:
            cursor = execute(
                f"UPDATE transcriptions SET lease_until = ? WHERE owner = ? AND {_ACTIVE} AND lease_until >= ?",  # noqa: S608
                (lease_until, owner, now_ms()),
            )
        return int(cursor.rowcount)
