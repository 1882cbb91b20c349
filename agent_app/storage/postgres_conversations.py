"""Conversations and their messages (each message stored as its camelCase JSON), in PostgreSQL.

The search matches folded text stored beside each title and message (folded in Python at write time, with
the same :func:`~agent_app.storage.names.fold_text` SQLite applies at query time), so both backends find
the same conversations without an extension on the server.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_app.storage.base import CONVERSATION_GONE, NotFoundError
from agent_app.storage.models import Conversation
from agent_app.storage.names import clean_name, fold_text, like_escape, title_from
from agent_app.storage.postgres_database import Connection, PostgresDatabase, row_as
from agent_app.storage.postgres_projects import lock_project
from agent_app.types import ChatMessage, new_id, now_ms

_CONVERSATION_COLUMNS = (
    "c.id, c.project_id, c.title, c.created_at, c.updated_at,"
    " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count,"
    " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user') AS question_count"
)
_MOST_RECENT_FIRST = " ORDER BY c.updated_at DESC, c.created_at DESC, c.id LIMIT %s"


def searchable(text: str | None) -> str:
    """``text`` folded for the search (PostgreSQL text holds no NUL, which no one searches for)."""
    return fold_text(text).replace("\x00", "")


def _activity_time(db: Connection, project_id: str) -> int:
    """Now, but strictly after the project's latest activity (the project's row is held: see lock_project)."""
    lock_project(db, project_id)
    row = db.execute(
        "SELECT MAX(updated_at) AS latest FROM conversations WHERE project_id = %s", (project_id,)
    ).fetchone()
    latest = row["latest"] if row else None
    return max(now_ms(), int(latest) + 1) if latest is not None else now_ms()


def insert_message(db: Connection, conversation_id: str, message: ChatMessage) -> None:
    """:meth:`PostgresConversationRows.append_message` inside a write transaction the caller holds (a run's
    start writes its question in the transaction that creates the run)."""
    body = message.model_dump_json(by_alias=True, exclude_none=True)
    row = db.execute("SELECT project_id FROM conversations WHERE id = %s", (conversation_id,)).fetchone()
    if row is None:
        raise NotFoundError(CONVERSATION_GONE)
    now = _activity_time(db, str(row["project_id"]))
    said = searchable(message.content) if message.role in ("user", "assistant") else ""
    db.execute(
        "INSERT INTO messages (id, conversation_id, role, body, said_folded, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (conversation_id, id) DO UPDATE"
        " SET body = excluded.body, role = excluded.role, said_folded = excluded.said_folded",
        (message.id, conversation_id, message.role, body, said, now),
    )
    title = title_from(message.content) if message.role == "user" else ""
    db.execute(  # the first question names the conversation
        "UPDATE conversations SET updated_at = %s, title = CASE WHEN title = '' AND %s <> '' THEN %s ELSE title END,"
        " title_folded = CASE WHEN title = '' AND %s <> '' THEN %s ELSE title_folded END WHERE id = %s",
        (now, title, title, title, searchable(title), conversation_id),
    )


def cut_last_turn(db: Connection, conversation_id: str, message_id: str, *, asked_again: bool) -> bool:
    """Inside the caller's write transaction, forget ``message_id`` and every message after it; ``False``, and
    nothing changed, when it is gone or no longer in the last turn (see SQLite's ``cut_last_turn``). With
    ``asked_again`` a title made from a replaced question is cleared, for the new question to title."""
    row = db.execute(
        "SELECT seq, role, body FROM messages WHERE conversation_id = %s AND id = %s", (conversation_id, message_id)
    ).fetchone()
    if row is None:
        return False
    seq = int(row["seq"])
    later_question = db.execute(
        "SELECT 1 FROM messages WHERE conversation_id = %s AND seq > %s AND role = 'user' LIMIT 1",
        (conversation_id, seq),
    ).fetchone()
    if later_question is not None:
        return False
    db.execute("DELETE FROM messages WHERE conversation_id = %s AND seq >= %s", (conversation_id, seq))
    if asked_again and row["role"] == "user":
        old_title = title_from(ChatMessage.model_validate_json(row["body"]).content)
        db.execute(
            "UPDATE conversations SET title = '', title_folded = '' WHERE id = %s AND title = %s",
            (conversation_id, old_title),
        )
    return True


class PostgresConversationRows:
    """The conversation part of :class:`~agent_app.storage.postgres.PostgresStorage`."""

    _db: PostgresDatabase

    def create_conversation(self, project_id: str, title: str = "") -> Conversation:
        with self._db.write() as db:
            now = _activity_time(db, project_id)
            conversation = Conversation(
                id=new_id(), project_id=project_id, title=title_from(title), created_at=now, updated_at=now
            )
            db.execute(
                "INSERT INTO conversations (id, project_id, title, title_folded, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (conversation.id, project_id, conversation.title, searchable(conversation.title), now, now),
            )
        return conversation

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = self._db.one(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = %s", (conversation_id,))  # noqa: S608 - a constant column list
        return row_as(Conversation, row) if row else None

    def list_conversations(self, project_id: str, *, limit: int | None = None) -> list[Conversation]:
        """The project's conversations, most recently active first (the first ``limit`` of them)."""
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.project_id = %s{_MOST_RECENT_FIRST}",  # noqa: S608 - constant
            (project_id, None if limit is None else max(limit, 0)),
        )
        return [row_as(Conversation, row) for row in rows]

    def search_conversations(self, project_id: str, words: Sequence[str], *, limit: int) -> list[Conversation]:
        """The project's conversations whose title or messages (what was said, not the JSON around it)
        contain every word of ``words`` (already folded: lower case, no accents), most recent first."""
        said = (
            "c.title_folded LIKE %s ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m"
            " WHERE m.conversation_id = c.id AND m.said_folded LIKE %s ESCAPE '\\')"
        )
        where = " AND ".join(f"({said})" for _ in words) or "TRUE"
        patterns = [f"%{like_escape(searchable(word))}%" for word in words for _ in range(2)]
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.project_id = %s AND {where}"  # noqa: S608 - constants and %s only
            + _MOST_RECENT_FIRST,
            (project_id, *patterns, max(limit, 0)),
        )
        return [row_as(Conversation, row) for row in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        """Give the conversation a title of the user's choosing (cleaned like every name)."""
        title = clean_name(title, "Untitled")
        with self._db.write() as db:
            db.execute(
                "UPDATE conversations SET title = %s, title_folded = %s WHERE id = %s",
                (title, searchable(title), conversation_id),
            )
        renamed = self.get_conversation(conversation_id)
        if renamed is None:  # there was none, or it was removed between the update and this read
            raise NotFoundError(CONVERSATION_GONE)
        return renamed

    def delete_conversation(self, conversation_id: str) -> None:
        """Forget the conversation and, by the schema's cascade, its messages and runs (media and transcripts stay)."""
        with self._db.write() as db:
            if db.execute("DELETE FROM conversations WHERE id = %s", (conversation_id,)).rowcount == 0:
                raise NotFoundError(CONVERSATION_GONE)

    def append_message(self, conversation_id: str, message: ChatMessage) -> None:
        """Store ``message`` at the end of the conversation; a stored id is replaced in place (see SQLite's)."""
        with self._db.write() as db:
            insert_message(db, conversation_id, message)

    def load_messages(self, conversation_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        """The conversation's messages in order; with ``limit``, only the last ``limit`` of them."""
        rows = self._db.all(
            "SELECT body FROM (SELECT seq, body FROM messages WHERE conversation_id = %s ORDER BY seq DESC LIMIT %s)"
            " AS latest ORDER BY seq",
            (conversation_id, None if limit is None else max(limit, 0)),
        )
        return [ChatMessage.model_validate_json(row["body"]) for row in rows]

    def count_messages(self, conversation_id: str) -> int:
        row = self._db.one("SELECT COUNT(*) AS n FROM messages WHERE conversation_id = %s", (conversation_id,))
        return int(row["n"]) if row else 0

    def clear_messages(self, conversation_id: str) -> None:
        with self._db.write() as db:
            db.execute("DELETE FROM messages WHERE conversation_id = %s", (conversation_id,))
            db.execute("UPDATE conversations SET updated_at = %s WHERE id = %s", (now_ms(), conversation_id))
