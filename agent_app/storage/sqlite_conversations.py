"""Conversations and their messages (each message stored as its camelCase JSON), in SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agent_app.storage.base import CONVERSATION_GONE, NotFoundError
from agent_app.storage.models import Conversation
from agent_app.storage.names import clean_name, fold_text, like_escape, title_from
from agent_app.storage.sqlite_database import SqliteDatabase, row_as
from agent_app.storage.sqlite_projects import require_project
from agent_app.types import ChatMessage, new_id, now_ms

_CONVERSATION_COLUMNS = (
    "c.id, c.project_id, c.title, c.created_at, c.updated_at,"
    " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count,"
    " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user') AS question_count"
)


def _activity_time(db: sqlite3.Connection, project_id: str) -> int:
    """Now, but strictly after the project's latest activity: "most recent first" needs no tie-break."""
    latest = db.execute("SELECT MAX(updated_at) FROM conversations WHERE project_id = ?", (project_id,)).fetchone()[0]
    return max(now_ms(), int(latest) + 1) if latest is not None else now_ms()


def insert_message(db: sqlite3.Connection, conversation_id: str, message: ChatMessage) -> None:
    """:meth:`ConversationRows.append_message` inside a write transaction the caller holds (a run's start
    writes its question in the transaction that creates the run)."""
    body = message.model_dump_json(by_alias=True, exclude_none=True)
    row = db.execute("SELECT project_id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
    if row is None:
        raise NotFoundError(CONVERSATION_GONE)
    now = _activity_time(db, str(row["project_id"]))
    db.execute(
        "INSERT INTO messages (id, conversation_id, role, body, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (conversation_id, id) DO UPDATE SET body = excluded.body, role = excluded.role",
        (message.id, conversation_id, message.role, body, now),
    )
    title = title_from(message.content) if message.role == "user" else ""
    db.execute(
        "UPDATE conversations SET updated_at = ?,"
        " title = CASE WHEN title = '' AND ? <> '' THEN ? ELSE title END WHERE id = ?",
        (now, title, title, conversation_id),
    )


def cut_last_turn(db: sqlite3.Connection, conversation_id: str, message_id: str, *, asked_again: bool) -> bool:
    """Inside the caller's write transaction, forget ``message_id`` and every message after it (the old branch
    of an edited question or a regenerated answer); ``False``, and nothing changed, when the message is gone
    or no longer in the last turn (a user message follows it). With ``asked_again`` a title made from a
    replaced question is cleared, so the new question titles the conversation as a first one does."""
    row = db.execute(
        "SELECT seq, role, body FROM messages WHERE conversation_id = ? AND id = ?", (conversation_id, message_id)
    ).fetchone()
    if row is None:
        return False
    seq = int(row["seq"])
    later_question = db.execute(
        "SELECT 1 FROM messages WHERE conversation_id = ? AND seq > ? AND role = 'user' LIMIT 1", (conversation_id, seq)
    ).fetchone()
    if later_question is not None:
        return False
    db.execute("DELETE FROM messages WHERE conversation_id = ? AND seq >= ?", (conversation_id, seq))
    if asked_again and row["role"] == "user":
        old_title = title_from(ChatMessage.model_validate_json(row["body"]).content)
        db.execute("UPDATE conversations SET title = '' WHERE id = ? AND title = ?", (conversation_id, old_title))
    return True


class ConversationRows:
    """The conversation part of :class:`~agent_app.storage.sqlite.SqliteStorage`."""

    _db: SqliteDatabase

    def create_conversation(self, project_id: str, title: str = "") -> Conversation:
        with self._db.write() as db:
            require_project(db, project_id)
            now = _activity_time(db, project_id)
            conversation = Conversation(
                id=new_id(), project_id=project_id, title=title_from(title), created_at=now, updated_at=now
            )
            db.execute(
                "INSERT INTO conversations (id, project_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (conversation.id, project_id, conversation.title, now, now),
            )
        return conversation

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = (
            self._db.connection()
            .execute(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?", (conversation_id,))  # noqa: S608 - a constant column list
            .fetchone()
        )
        return row_as(Conversation, row) if row else None

    def list_conversations(self, project_id: str, *, limit: int | None = None) -> list[Conversation]:
        """The project's conversations, most recently active first (the first ``limit`` of them)."""
        rows = (
            self._db.connection()
            .execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.project_id = ?"  # noqa: S608 - constant
                " ORDER BY c.updated_at DESC, c.created_at DESC, c.id LIMIT ?",
                (project_id, -1 if limit is None else max(limit, 0)),
            )
            .fetchall()
        )
        return [row_as(Conversation, row) for row in rows]

    def search_conversations(self, project_id: str, words: Sequence[str], *, limit: int) -> list[Conversation]:
        """The project's conversations whose title or messages (what was said, not the JSON around it)
        contain every word of ``words`` (already folded: lower case, no accents), most recent first."""
        db = self._db.connection()
        db.create_function("agent_fold", 1, fold_text, deterministic=True)
        said = (
            "agent_fold(c.title) LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id"
            " AND m.role IN ('user', 'assistant') AND agent_fold(json_extract(m.body, '$.content')) LIKE ? ESCAPE '\\')"
        )
        where = " AND ".join(f"({said})" for _ in words) or "1"
        patterns = [f"%{like_escape(word)}%" for word in words for _ in range(2)]
        rows = db.execute(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.project_id = ? AND {where}"  # noqa: S608 - constants and ? only
            " ORDER BY c.updated_at DESC, c.created_at DESC, c.id LIMIT ?",
            (project_id, *patterns, max(limit, 0)),
        ).fetchall()
        return [row_as(Conversation, row) for row in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        """Give the conversation a title of the user's choosing (cleaned like every name)."""
        with self._db.write() as db:
            db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (clean_name(title, "Untitled"), conversation_id)
            )
        renamed = self.get_conversation(conversation_id)
        if renamed is None:  # there was none, or it was removed between the update and this read
            raise NotFoundError(CONVERSATION_GONE)
        return renamed

    def delete_conversation(self, conversation_id: str) -> None:
        """Forget the conversation and, by the schema's cascade, its messages and runs (the media and
        transcripts stay)."""
        with self._db.write() as db:
            if db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount == 0:
                raise NotFoundError(CONVERSATION_GONE)

    def append_message(self, conversation_id: str, message: ChatMessage) -> None:
        """Store ``message`` (its camelCase JSON) at the end of the conversation.

        Appending a message id that is already stored replaces its body in place, so a retried
        write never duplicates a message. The first user message becomes the conversation's title.
        """
        with self._db.write() as db:
            insert_message(db, conversation_id, message)

    def load_messages(self, conversation_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        """The conversation's messages in order; with ``limit``, only the last ``limit`` of them."""
        db = self._db.connection()
        if limit is None:
            rows = db.execute(
                "SELECT body FROM messages WHERE conversation_id = ? ORDER BY seq", (conversation_id,)
            ).fetchall()
        else:
            rows = db.execute(
                "SELECT body FROM (SELECT seq, body FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?)"
                " ORDER BY seq",
                (conversation_id, max(limit, 0)),
            ).fetchall()
        return [ChatMessage.model_validate_json(row["body"]) for row in rows]

    def count_messages(self, conversation_id: str) -> int:
        row = (
            self._db.connection()
            .execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,))
            .fetchone()
        )
        return int(row[0])

    def clear_messages(self, conversation_id: str) -> None:
        with self._db.write() as db:
            db.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))
            db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now_ms(), conversation_id))
