"""Runs and run events in the PostgreSQL database of :class:`~agent_app.storage.postgres.PostgresStorage`.

Implements :class:`agent_app.runs.run_store.RunStore`. One active run per conversation is the database's rule
across every process sharing it: the unique partial index ``one_active_run_per_conversation`` makes the
second of two simultaneous starts wait for the first to commit, then fail, with nothing of it written (nor
of the turn it would replace). An
event's ``seq`` comes from its run's counter (``last_event_seq``), taken under the run's row lock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from psycopg import errors
from psycopg.rows import DictRow

from agent_app.errors import ErrorKind
from agent_app.runs.events import EndEvent, RunEvent, RunEventData
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
from agent_app.storage.postgres_conversations import cut_last_turn, insert_message
from agent_app.storage.postgres_database import Connection, PostgresDatabase
from agent_app.storage.postgres_write_feed import notify
from agent_app.storage.sqlite_runs import INTERRUPTED_ERROR, events_of
from agent_app.types import AgentContext, ChatMessage, new_id, now_ms

logger = logging.getLogger(__name__)

ONE_ACTIVE_RUN = "one_active_run_per_conversation"
_RUN_COLUMNS = (
    "id, conversation_id, state, context, stop_requested, error, error_kind, owner, lease_until, created_at,"
    " finished_at"
)


def _insert_event(db: Connection, run_id: str, seq: int, kind: str, body: str) -> None:
    """Inside a write transaction: the run's event ``seq`` (its counter already moved to it), announced to
    the other processes when the transaction commits."""
    db.execute(
        "INSERT INTO run_events (run_id, seq, kind, data, created_at) VALUES (%s, %s, %s, %s, %s)",
        (run_id, seq, kind, body, now_ms()),
    )
    notify(db, "e", run_id, seq)


def _run_of(row: DictRow) -> Run:
    context = row["context"]
    return Run.model_validate({**row, "context": AgentContext.model_validate_json(context) if context else None})


class PostgresRunStore:
    """The run store of one PostgreSQL database (see :class:`agent_app.runs.run_store.RunStore`)."""

    def __init__(self, db: PostgresDatabase) -> None:
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
                    " VALUES (%s, %s, 'queued', %s, %s, %s, %s)",
                    (
                        run.id,
                        conversation_id,
                        context.model_dump_json(by_alias=True, exclude_none=True) if context else None,
                        owner,
                        lease_until,
                        now,
                    ),
                )
            except errors.UniqueViolation as exc:  # the write rolls back on the way out, nothing of it kept
                if exc.diag.constraint_name == ONE_ACTIVE_RUN:
                    raise RunBusyError(BUSY_MESSAGE) from None
                raise
            # The run's row is in: a second start waits on the index until this commits, then is refused,
            # so only the accepted start replaces the turn.
            asked_again = any(message.role == "user" for message in messages)
            if replace_from is not None and not cut_last_turn(
                db, conversation_id, replace_from, asked_again=asked_again
            ):
                raise TurnChangedError(TURN_CHANGED_MESSAGE)
            for message in messages:
                insert_message(db, conversation_id, message)
            notify(db, "c", conversation_id)  # delivered to every listening process when this commits
        self._db.wakeups.conversation_changed(conversation_id)
        return run

    @staticmethod
    def _interrupt_expired(db: Connection, conversation_id: str, now: int) -> None:
        """An active run nobody renewed (its server was stopped or killed) is over: interrupted."""
        db.execute(
            "UPDATE runs SET state = 'interrupted', error = %s, finished_at = %s"
            " WHERE conversation_id = %s AND state IN ('queued', 'running') AND lease_until < %s",
            (INTERRUPTED_ERROR, now, conversation_id, now),
        )

    def get_run(self, run_id: str) -> Run | None:
        row = self._db.one(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = %s", (run_id,))  # noqa: S608 - constant
        return _run_of(row) if row else None

    def active_run(self, conversation_id: str) -> Run | None:
        row = self._db.one(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE conversation_id = %s AND state IN ('queued', 'running')",  # noqa: S608 - constant
            (conversation_id,),
        )
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
        row = self._db.one(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE conversation_id = %s ORDER BY created_at DESC, seq DESC LIMIT 1",  # noqa: S608 - constant
            (conversation_id,),
        )
        return _run_of(row) if row else None

    def mark_running(self, run_id: str, *, owner: str | None = None, lease_until: int | None = None) -> bool:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET state = 'running', owner = COALESCE(%s, owner),"
                " lease_until = COALESCE(%s, lease_until)"
                " WHERE id = %s AND state = 'queued' AND lease_until >= %s",
                (owner, lease_until, run_id, now_ms()),
            )
        return cursor.rowcount == 1

    def append_event(self, run_id: str, event: RunEventData, *, owner: str | None = None) -> int:
        body = event.stored_json()
        with self._db.write() as db:
            # The counter's row lock is also the fence: an interrupting UPDATE waits for it, or it for that.
            row = db.execute(
                "UPDATE runs SET last_event_seq = last_event_seq + 1 WHERE id = %s AND (%s::text IS NULL OR"
                " (owner = %s AND state IN ('queued', 'running') AND lease_until >= %s)) RETURNING last_event_seq",
                (run_id, owner, owner, now_ms()),
            ).fetchone()
            if row is None and owner is not None:
                raise LeaseLostError(f"Run {run_id} is no longer {owner}'s")
            if row is None:
                raise StorageError("The database could not be written (the run is gone)")
            seq = int(row["last_event_seq"])
            _insert_event(db, run_id, seq, event.kind, body)
        self._db.wakeups.run_changed(run_id, seq)
        return seq

    def append_run_message(self, run_id: str, owner: str, conversation_id: str, message: ChatMessage) -> None:
        with self._db.write() as db:
            fenced = db.execute(
                "SELECT 1 FROM runs WHERE id = %s AND owner = %s AND state IN ('queued', 'running')"
                " AND lease_until >= %s FOR UPDATE",
                (run_id, owner, now_ms()),
            ).fetchone()
            if fenced is None:
                raise LeaseLostError(f"Run {run_id} is no longer {owner}'s")
            insert_message(db, conversation_id, message)

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        rows = self._db.all(
            "SELECT run_id, seq, kind, data, created_at FROM run_events WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, after_seq),
        )
        return events_of(run_id, rows)

    def request_stop(self, run_id: str) -> bool:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET stop_requested = TRUE WHERE id = %s AND state IN ('queued', 'running')", (run_id,)
            )
            notify(db, "r", run_id)
        self._db.wakeups.run_changed(run_id)
        return cursor.rowcount == 1

    def stop_requested(self, owner: str) -> list[str]:
        rows = self._db.all(
            "SELECT id FROM runs WHERE owner = %s AND state IN ('queued', 'running') AND stop_requested", (owner,)
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
                "UPDATE runs SET state = %s, error = %s, error_kind = %s, finished_at = %s,"
                " last_event_seq = last_event_seq + 1"
                " WHERE id = %s AND state IN ('queued', 'running')"
                " AND (%s::text IS NULL OR (owner = %s AND lease_until >= %s)) RETURNING last_event_seq",
                (state, error, None if error_kind is None else str(error_kind), now, run_id, owner, owner, now),
            ).fetchone()
            seq = None if row is None else int(row["last_event_seq"])
            if seq is not None:
                _insert_event(db, run_id, seq, end.kind, end.stored_json())
            notify(db, "r", run_id)
        self._db.wakeups.run_changed(run_id, seq)
        return seq is not None

    def renew_leases(self, owner: str, lease_until: int) -> int:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE runs SET lease_until = %s WHERE owner = %s AND state IN ('queued', 'running')"
                " AND lease_until >= %s",
                (lease_until, owner, now_ms()),
            )
        return cursor.rowcount
