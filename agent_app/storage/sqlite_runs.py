"""Runs and run events in the SQLite database of :class:`~agent_app.storage.sqlite.SqliteStorage`.

Implements :class:`agent_app.runs.run_store.RunStore` on the storage's :class:`SqliteDatabase` (its
per-thread connections and write transactions), so a run, the messages it starts with (and the branch
they replace) and its events commit with the same guarantees as the conversation. The unique partial index
``one_active_run_per_conversation`` (schema 2) is what refuses a second active run; PostgreSQL has the
same construct for the scale-out step.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from agent_app.errors import ErrorKind
from agent_app.runs.events import EndEvent, RunEvent, RunEventData, stored_event
from agent_app.runs.models import (
    ACTIVE_STATES,
    BUSY_MESSAGE,
    TURN_CHANGED_MESSAGE,
    LeaseLostError,
    Run,
    RunBusyError,
    RunState,
    TurnChangedError,
)
from agent_app.runs.wakeups import RunWakeups
from agent_app.storage.base import StorageError
from agent_app.storage.sqlite_conversations import cut_last_turn, insert_message
from agent_app.storage.sqlite_database import SqliteDatabase
from agent_app.types import AgentContext, ChatMessage, new_id, now_ms

logger = logging.getLogger(__name__)

# Active runs are "state IN ('queued', 'running')", written out in each query (the partial indexes' own words).
INTERRUPTED_ERROR = "The server stopped while the assistant was working"


def events_of(run_id: str, rows: Iterable[Mapping[str, Any]]) -> list[RunEvent]:
    """Stored event rows (``seq``, ``kind``, ``data``, ``created_at``) as events, on either backend; a row this
    release cannot read (a kind or shape a newer one wrote) is skipped and logged."""
    events = []
    for row in rows:
        try:
            data = stored_event(row["kind"], row["data"])
        except ValidationError:
            logger.warning("Run %s: event %s (%s) is unreadable, skipped", run_id, row["seq"], row["kind"])
            continue
        events.append(RunEvent(run_id=run_id, seq=row["seq"], data=data, created_at=row["created_at"]))
    return events


def _fence(db: sqlite3.Connection, run_id: str, owner: str | None) -> None:
    """Inside a write transaction: raise :class:`LeaseLostError` unless ``run_id`` is active, ``owner``'s and
    its lease live (no check without an owner: writes of the page, not of the run)."""
    if owner is None:
        return
    row = db.execute(
        "SELECT 1 FROM runs WHERE id = ? AND owner = ? AND state IN ('queued', 'running') AND lease_until >= ?",
        (run_id, owner, now_ms()),
    ).fetchone()
    if row is None:
        raise LeaseLostError(f"Run {run_id} is no longer {owner}'s")


def _insert_event(db: sqlite3.Connection, run_id: str, seq: int, kind: str, body: str) -> None:
    """Inside a write transaction: the run's event ``seq`` (its counter already moved to it)."""
    db.execute(
        "INSERT INTO run_events (run_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)",
        (run_id, seq, kind, body, now_ms()),
    )


def _run_of(row: sqlite3.Row) -> Run:
    data = dict(row)
    data["stop_requested"] = bool(data["stop_requested"])
    context = data.pop("context")
    return Run.model_validate({**data, "context": AgentContext.model_validate_json(context) if context else None})


class SqliteRunStore:
    """The run store of one SQLite database (see :class:`agent_app.runs.run_store.RunStore`)."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    @property
    def wakeups(self) -> RunWakeups:
        return self._db.wakeups

    def create_run(  # noqa: PLR0913 - the run and the turn it replaces are one transaction, so one call
        self,
        conversation_id: str,
        context: AgentContext | None,
        messages: Sequence[ChatMessage],
        *,
        owner: str,
        lease_until: int,
        replace_from: str | None = None,
    ) -> Run:
        now = now_ms()
        run = Run(
            id=new_id(),
            conversation_id=conversation_id,
            state="queued",
            context=context,
            owner=owner,
            lease_until=lease_until,
            created_at=now,
        )
        with self._db.write() as db:
            self._interrupt_expired(db, conversation_id, now)
            try:
                db.execute(
                    "INSERT INTO runs (id, conversation_id, state, context, owner, lease_until, created_at)"
                    " VALUES (?, ?, 'queued', ?, ?, ?, ?)",
                    (
                        run.id,
                        conversation_id,
                        context.model_dump_json(by_alias=True, exclude_none=True) if context else None,
                        owner,
                        lease_until,
                        now,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                if "runs.conversation_id" in str(exc):
                    raise RunBusyError(BUSY_MESSAGE) from None
                raise  # no such conversation (foreign key)
            asked_again = any(message.role == "user" for message in messages)
            if replace_from is not None and not cut_last_turn(
                db, conversation_id, replace_from, asked_again=asked_again
            ):
                raise TurnChangedError(TURN_CHANGED_MESSAGE)
            for message in messages:
                insert_message(db, conversation_id, message)
        self._db.wakeups.conversation_changed(conversation_id)
        return run

    @staticmethod
    def _interrupt_expired(db: sqlite3.Connection, conversation_id: str, now: int) -> None:
        """An active run nobody renewed (its server was stopped or killed) is over: interrupted."""
        db.execute(
            "UPDATE runs SET state = 'interrupted', error = ?, finished_at = ?"
            " WHERE conversation_id = ? AND state IN ('queued', 'running') AND lease_until < ?",
            (INTERRUPTED_ERROR, now, conversation_id, now),
        )

    def get_run(self, run_id: str) -> Run | None:
        row = self._db.connection().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _run_of(row) if row else None

    def active_run(self, conversation_id: str) -> Run | None:
        row = (
            self._db.connection().execute(
                "SELECT * FROM runs WHERE conversation_id = ? AND state IN ('queued', 'running')", (conversation_id,)
            )
        ).fetchone()
        if row is None:
            return None
        run = _run_of(row)
        now = now_ms()
        if run.lease_until >= now:
            return run
        try:
            with self._db.write() as db:
                self._interrupt_expired(db, conversation_id, now)
        except StorageError:  # over all the same (its lease ended); the next writer records it
            logger.warning("Could not mark run %s interrupted", run.id, exc_info=True)
        return None

    def latest_run(self, conversation_id: str) -> Run | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT * FROM runs WHERE conversation_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (conversation_id,),
            )
            .fetchone()
        )
        return _run_of(row) if row else None

    def mark_running(self, run_id: str, *, owner: str | None = None, lease_until: int | None = None) -> bool:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET state = 'running', owner = COALESCE(?, owner), lease_until = COALESCE(?, lease_until)"
                " WHERE id = ? AND state = 'queued' AND lease_until >= ?",
                (owner, lease_until, run_id, now_ms()),
            )
        return cursor.rowcount == 1

    def append_event(self, run_id: str, event: RunEventData, *, owner: str | None = None) -> int:
        body = event.stored_json()
        with self._db.write() as db:
            _fence(db, run_id, owner)
            row = db.execute(
                "UPDATE runs SET last_event_seq = last_event_seq + 1 WHERE id = ? RETURNING last_event_seq", (run_id,)
            ).fetchone()
            if row is None:
                raise StorageError(f"The database could not be written (no run {run_id})")
            seq = int(row[0])
            _insert_event(db, run_id, seq, event.kind, body)
        self._db.wakeups.run_changed(run_id, seq)
        return seq

    def append_run_message(self, run_id: str, owner: str, conversation_id: str, message: ChatMessage) -> None:
        with self._db.write() as db:
            _fence(db, run_id, owner)
            insert_message(db, conversation_id, message)

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        rows = (
            self._db.connection()
            .execute("SELECT * FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq", (run_id, after_seq))
            .fetchall()
        )
        return events_of(run_id, rows)

    def request_stop(self, run_id: str) -> bool:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET stop_requested = 1 WHERE id = ? AND state IN ('queued', 'running')", (run_id,)
            )
        self._db.wakeups.run_changed(run_id)
        return cursor.rowcount == 1

    def stop_requested(self, owner: str) -> list[str]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT id FROM runs WHERE owner = ? AND state IN ('queued', 'running') AND stop_requested = 1",
                (owner,),
            )
            .fetchall()
        )
        return [str(row["id"]) for row in rows]

    def finish_run(
        self,
        run_id: str,
        state: RunState,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
        *,
        owner: str | None = None,
    ) -> bool:
        if state in ACTIVE_STATES:
            raise ValueError(f"{state!r} does not end a run")
        now = now_ms()
        end = EndEvent(state=state, error=error, error_kind=error_kind)
        with self._db.write() as db:
            row = db.execute(
                "UPDATE runs SET state = ?, error = ?, error_kind = ?, finished_at = ?,"
                " last_event_seq = last_event_seq + 1"
                " WHERE id = ? AND state IN ('queued', 'running')"
                " AND (? IS NULL OR (owner = ? AND lease_until >= ?)) RETURNING last_event_seq",
                (state, error, None if error_kind is None else str(error_kind), now, run_id, owner, owner, now),
            ).fetchone()
            seq = None if row is None else int(row[0])
            if seq is not None:
                _insert_event(db, run_id, seq, end.kind, end.stored_json())
        self._db.wakeups.run_changed(run_id, seq)
        return seq is not None

    def renew_leases(self, owner: str, lease_until: int) -> int:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET lease_until = ? WHERE owner = ? AND state IN ('queued', 'running')"
                " AND lease_until >= ?",
                (lease_until, owner, now_ms()),
            )
        return cursor.rowcount
