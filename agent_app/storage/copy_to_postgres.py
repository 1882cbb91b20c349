"""Copy a SQLite data folder's database into an empty PostgreSQL database, in one transaction:
``python -m agent_app.storage.copy_to_postgres DATA_DIR [URL]`` (the URL defaults to the
``AGENT_DATABASE_URL`` setting, so the password need not be on a command line).

Projects, scenes, assets, conversations, messages, runs and their events are copied with their ids, times
and order. Media files and the transcript cache are not moved: they stay under ``DATA_DIR``, which the app
keeps as its ``AGENT_DATA_DIR``. A database that already holds projects is refused (nothing is merged).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_app.settings import load_settings
from agent_app.storage.base import StorageError
from agent_app.storage.postgres_conversations import searchable
from agent_app.storage.postgres_database import Connection, PostgresDatabase
from agent_app.storage.sqlite import DB_FILE_NAME, SqliteStorage

Row = dict[str, Any]


def _said(row: Row) -> str:
    """The folded text the search matches for a stored message (what a user or the assistant said)."""
    if row["role"] not in ("user", "assistant"):
        return ""
    content = json.loads(row["body"]).get("content")
    return searchable(content if isinstance(content, str) else "")


_TABLES: tuple[tuple[str, str, tuple[str, ...], Callable[[Row], dict[str, Any]]], ...] = (
    ("projects", "created_at, rowid", ("id", "name", "created_at", "owner_issuer", "owner_subject"), dict),
    ("scenes", "rowid", ("id", "project_id", "name", "position", "created_at"), dict),
    (
        "assets",
        "rowid",
        ("id", "project_id", "name", "kind", "duration_ms", "size_bytes", "mime_type", "file_name", "created_at"),
        dict,
    ),
    (
        "conversations",
        "rowid",
        ("id", "project_id", "title", "title_folded", "created_at", "updated_at"),
        lambda row: {**row, "title_folded": searchable(row["title"])},
    ),
    (
        "messages",
        "seq",  # PostgreSQL numbers them again, in the same order
        ("id", "conversation_id", "role", "body", "said_folded", "created_at"),
        lambda row: {**row, "said_folded": _said(row)},
    ),
    (
        "runs",
        "rowid",
        (
            "id", "conversation_id", "state", "context", "stop_requested", "error", "error_kind", "owner",
            "lease_until", "created_at", "finished_at", "last_event_seq",
        ),
        lambda row: {**row, "stop_requested": bool(row["stop_requested"])},
    ),
    ("run_events", "run_id, seq", ("run_id", "seq", "kind", "data", "created_at"), dict),
    ("sign_ins", "rowid", ("id", "owner_issuer", "owner_subject", "created_at", "signed_out_at"), dict),
    (
        "api_tokens",
        "rowid",
        ("id", "owner_issuer", "owner_subject", "name", "token_hash", "created_at", "revoked_at"),
        dict,
    ),
)  # fmt: skip
"""Each table in the order foreign keys need: its SQLite order, the PostgreSQL columns, how a row becomes one."""

_SOURCE_SQL = {
    "runs": "SELECT r.*, (SELECT COALESCE(MAX(seq), 0) FROM run_events e WHERE e.run_id = r.id) AS last_event_seq"
    " FROM runs r ORDER BY r.rowid",
}


@contextlib.contextmanager
def _sqlite_rows(data_dir: Path) -> Iterator[Callable[[str, str], list[Row]]]:
    SqliteStorage(data_dir).close()  # brought to the current schema first, as the app would on start
    source = sqlite3.connect(f"{(data_dir / DB_FILE_NAME).resolve().as_uri()}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    try:

        def rows(table: str, order: str) -> list[Row]:
            sql = _SOURCE_SQL.get(table, f"SELECT * FROM {table} ORDER BY {order}")  # noqa: S608 - constants
            return [dict(row) for row in source.execute(sql)]

        yield rows
    finally:
        source.close()


def _insert(db: Connection, table: str, columns: Sequence[str], rows: list[dict[str, Any]]) -> None:
    if rows:
        placeholders = ", ".join(["%s"] * len(columns))
        with db.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",  # noqa: S608 - constants
                [tuple(row[column] for column in columns) for row in rows],
            )


def copy_to_postgres(data_dir: Path, url: str) -> dict[str, int]:
    """Copy the database of ``data_dir`` into the empty PostgreSQL database at ``url``; how many rows of each
    table. Raises :class:`StorageError` (nothing written) when either cannot be used or the target holds data."""
    if not (data_dir / DB_FILE_NAME).is_file():
        raise StorageError(f"No {DB_FILE_NAME} in {data_dir}: not a data folder of this app")
    target = PostgresDatabase(url, busy_timeout_ms=10_000, max_connections=1)
    counts: dict[str, int] = {}
    try:
        with _sqlite_rows(data_dir) as rows, target.write() as db:
            if db.execute("SELECT 1 FROM projects LIMIT 1").fetchone() is not None:
                raise StorageError("The PostgreSQL database already holds projects: copy into an empty one")
            for table, order, columns, convert in _TABLES:
                converted = [convert(row) for row in rows(table, order)]
                _insert(db, table, columns, converted)
                counts[table] = len(converted)
    finally:
        target.close_pool()
    return counts


def main(argv: Sequence[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    url = argv[1] if len(argv) == 2 else load_settings().database_url
    if not url:
        print("Give the PostgreSQL URL, or set AGENT_DATABASE_URL", file=sys.stderr)
        return 2
    try:
        counts = copy_to_postgres(Path(argv[0]), url)
    except StorageError as exc:
        print(f"Nothing was copied: {exc}", file=sys.stderr)
        return 1
    print("Copied " + ", ".join(f"{count} {table}" for table, count in counts.items()) + ".")
    print(f"Media files and the transcript cache stay in {argv[0]}: keep it as AGENT_DATA_DIR.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
