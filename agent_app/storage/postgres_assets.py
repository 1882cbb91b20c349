"""Media assets in PostgreSQL: the upload copied into the local media directory and probed (as with SQLite),
then its row recorded in the shared database."""

from __future__ import annotations

from typing import BinaryIO

from agent_app.storage.asset_media import AssetMedia
from agent_app.storage.base import ASSET_GONE, PROJECT_GONE, NotFoundError
from agent_app.storage.media_import import import_media_file
from agent_app.storage.names import like_escape
from agent_app.storage.postgres_database import PostgresDatabase, row_as
from agent_app.storage.sqlite_assets import DEFAULT_MAX_UPLOAD_BYTES, asset_columns
from agent_app.types import MediaAsset, now_ms

_NAME_MATCHES = "project_id = %s AND name ILIKE %s ESCAPE '\\'"
"""The library's filter: the project's assets whose name contains the text, in any case."""


def _contains(text: str) -> str:
    return f"%{like_escape(text.replace(chr(0), ''))}%"  # PostgreSQL text holds no NUL; no name has one


class PostgresAssetRows(AssetMedia):
    """The media part of :class:`~agent_app.storage.postgres.PostgresStorage`: rows here, files in the media store."""

    _db: PostgresDatabase

    def import_asset(
        self, project_id: str, file_name: str, data: BinaryIO, *, max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    ) -> MediaAsset:
        """See :meth:`agent_app.storage.sqlite_assets.AssetRows.import_asset`: the same checks, all or nothing."""
        if self._db.one("SELECT 1 FROM projects WHERE id = %s", (project_id,)) is None:
            raise NotFoundError(PROJECT_GONE)

        def record(asset: MediaAsset, stored_name: str) -> None:
            with self._db.write() as db:
                db.execute(
                    "INSERT INTO assets (id, project_id, name, kind, duration_ms, size_bytes, mime_type, file_name,"
                    " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (*asset_columns(asset, project_id, stored_name), now_ms()),
                )

        return import_media_file(self._media_store, file_name, data, max_bytes, record)

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        row = self._db.one("SELECT * FROM assets WHERE id = %s", (asset_id,))
        return row_as(MediaAsset, row) if row else None

    def asset_project_id(self, asset_id: str) -> str | None:
        row = self._db.one("SELECT project_id FROM assets WHERE id = %s", (asset_id,))
        return str(row["project_id"]) if row else None

    def _stored_name(self, asset_id: str) -> str | None:
        row = self._db.one("SELECT file_name FROM assets WHERE id = %s", (asset_id,))
        return str(row["file_name"]) if row else None

    def list_assets(self, project_id: str) -> list[MediaAsset]:
        rows = self._db.all("SELECT * FROM assets WHERE project_id = %s ORDER BY created_at, id", (project_id,))
        return [row_as(MediaAsset, row) for row in rows]

    def find_assets(self, project_id: str, *, name_contains: str = "", limit: int, offset: int = 0) -> list[MediaAsset]:
        """One page of the project's assets, newest first, whose name contains ``name_contains`` (any case)."""
        rows = self._db.all(
            f"SELECT * FROM assets WHERE {_NAME_MATCHES} ORDER BY created_at DESC, seq DESC LIMIT %s OFFSET %s",  # noqa: S608 - constant
            (project_id, _contains(name_contains), max(limit, 0), max(offset, 0)),
        )
        return [row_as(MediaAsset, row) for row in rows]

    def count_assets(self, project_id: str, *, name_contains: str = "") -> int:
        row = self._db.one(
            f"SELECT COUNT(*) AS n FROM assets WHERE {_NAME_MATCHES}",  # noqa: S608 - constant
            (project_id, _contains(name_contains)),
        )
        return int(row["n"]) if row else 0

    def remove_asset(self, asset_id: str) -> None:
        """Delete the asset's file, then forget the asset: a media store out of reach refuses the removal with
        nothing lost, and a row left without its file (the database failing in between) shows as missing and can
        be removed again."""
        stored_name = self._stored_name(asset_id)
        if stored_name is None:
            raise NotFoundError(ASSET_GONE)
        self._media_store.delete(stored_name)
        with self._db.write() as db:
            db.execute("DELETE FROM assets WHERE id = %s", (asset_id,))
