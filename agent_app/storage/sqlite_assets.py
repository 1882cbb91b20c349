"""Media assets: the upload copied into the media directory and probed, then its row recorded."""

from __future__ import annotations

from typing import BinaryIO

from agent_app.settings import Settings
from agent_app.storage.asset_media import AssetMedia
from agent_app.storage.base import ASSET_GONE, NotFoundError
from agent_app.storage.media_import import import_media_file
from agent_app.storage.names import like_escape
from agent_app.storage.sqlite_database import SqliteDatabase, row_as
from agent_app.storage.sqlite_projects import require_project
from agent_app.types import MediaAsset, now_ms

DEFAULT_MAX_UPLOAD_BYTES = Settings().max_upload_bytes
"""The default of ``AGENT_MAX_UPLOAD_MB``, in bytes."""


def asset_columns(asset: MediaAsset, project_id: str, stored_name: str) -> tuple[str | int | None, ...]:
    """An asset row's values in the order both backends insert them (``created_at`` follows)."""
    return (
        asset.id,
        project_id,
        asset.name,
        asset.kind,
        asset.duration_ms,
        asset.size_bytes,
        asset.mime_type,
        stored_name,
    )


class AssetRows(AssetMedia):
    """The media part of :class:`~agent_app.storage.sqlite.SqliteStorage`: rows here, files in the media store."""

    _db: SqliteDatabase

    def import_asset(
        self, project_id: str, file_name: str, data: BinaryIO, *, max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    ) -> MediaAsset:
        """Copy an upload of at most ``max_bytes`` (the page passes its ``AGENT_MAX_UPLOAD_MB``) into the
        media directory, probe it, and record it; all or nothing.

        Raises :class:`AssetRejectedError` (with a message for the user) for a file of the wrong
        type, too large, empty or unreadable as media; nothing is left on disk or in the database.
        """
        require_project(self._db.connection(), project_id)

        def record(asset: MediaAsset, stored_name: str) -> None:
            with self._db.write() as db:
                db.execute(
                    "INSERT INTO assets (id, project_id, name, kind, duration_ms, size_bytes, mime_type, file_name,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*asset_columns(asset, project_id, stored_name), now_ms()),
                )

        return import_media_file(self._media_store, file_name, data, max_bytes, record)

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        row = self._db.connection().execute("SELECT * FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return row_as(MediaAsset, row) if row else None

    def asset_project_id(self, asset_id: str) -> str | None:
        row = self._db.connection().execute("SELECT project_id FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return str(row["project_id"]) if row else None

    def _stored_name(self, asset_id: str) -> str | None:
        row = self._db.connection().execute("SELECT file_name FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return str(row["file_name"]) if row else None

    def list_assets(self, project_id: str) -> list[MediaAsset]:
        rows = (
            self._db.connection()
            .execute("SELECT * FROM assets WHERE project_id = ? ORDER BY created_at, id", (project_id,))
            .fetchall()
        )
        return [row_as(MediaAsset, row) for row in rows]

    def find_assets(self, project_id: str, *, name_contains: str = "", limit: int, offset: int = 0) -> list[MediaAsset]:
        """One page of the project's assets, newest first, whose name contains ``name_contains`` (any case):
        what the library draws, so a rerun reads the same few rows with 10 assets or 2,000."""
        rows = (
            self._db.connection()
            .execute(
                "SELECT * FROM assets WHERE project_id = ? AND name LIKE ? ESCAPE '\\'"
                " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
                (project_id, f"%{like_escape(name_contains)}%", max(limit, 0), max(offset, 0)),
            )
            .fetchall()
        )
        return [row_as(MediaAsset, row) for row in rows]

    def count_assets(self, project_id: str, *, name_contains: str = "") -> int:
        row = (
            self._db.connection()
            .execute(
                "SELECT COUNT(*) FROM assets WHERE project_id = ? AND name LIKE ? ESCAPE '\\'",
                (project_id, f"%{like_escape(name_contains)}%"),
            )
            .fetchone()
        )
        return int(row[0])

    def remove_asset(self, asset_id: str) -> None:
        """Delete the asset's file, then forget the asset: a media store out of reach refuses the removal with
        nothing lost, and a row left without its file (the database failing in between) shows as missing and can
        be removed again."""
        stored_name = self._stored_name(asset_id)
        if stored_name is None:
            raise NotFoundError(ASSET_GONE)
        self._media_store.delete(stored_name)
        with self._db.write() as db:
            db.execute("DELETE FROM assets WHERE id = ?", (asset_id,))
