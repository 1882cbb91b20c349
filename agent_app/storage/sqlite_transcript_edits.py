"""The user's transcript edits in SQLite: one row per corrected segment, one per named speaker, so two tabs
editing different segments never overwrite each other."""

from __future__ import annotations

from agent_app.storage.base import NotFoundError
from agent_app.storage.sqlite_database import SqliteDatabase
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits
from agent_app.types import now_ms


class TranscriptEditRows:
    """The transcript-edit part of :class:`~agent_app.storage.sqlite.SqliteStorage`."""

    _db: SqliteDatabase

    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        db = self._db.connection()
        corrections = db.execute(
            "SELECT start_ms, original_text, text FROM transcript_corrections WHERE asset_id = ? ORDER BY start_ms",
            (asset_id,),
        ).fetchall()
        names = db.execute("SELECT speaker, name FROM speaker_names WHERE asset_id = ?", (asset_id,)).fetchall()
        return TranscriptEdits(
            corrections=[SegmentCorrection(start_ms=r[0], original=r[1], text=r[2]) for r in corrections],
            speaker_names={str(r[0]): str(r[1]) for r in names},
        )

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None:
        with self._db.write() as db:
            if db.execute("SELECT 1 FROM assets WHERE id = ?", (asset_id,)).fetchone() is None:
                raise NotFoundError(f"No asset {asset_id}")
            db.execute(
                "INSERT INTO transcript_corrections (asset_id, start_ms, original_text, text, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (asset_id, start_ms) DO UPDATE SET"
                " original_text = excluded.original_text, text = excluded.text, updated_at = excluded.updated_at",
                (asset_id, correction.start_ms, correction.original, correction.text, now_ms()),
            )

    def remove_correction(self, asset_id: str, start_ms: int) -> None:
        with self._db.write() as db:
            db.execute("DELETE FROM transcript_corrections WHERE asset_id = ? AND start_ms = ?", (asset_id, start_ms))

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None:
        with self._db.write() as db:
            if not name:
                db.execute("DELETE FROM speaker_names WHERE asset_id = ? AND speaker = ?", (asset_id, speaker))
                return
            if db.execute("SELECT 1 FROM assets WHERE id = ?", (asset_id,)).fetchone() is None:
                raise NotFoundError(f"No asset {asset_id}")
            db.execute(
                "INSERT INTO speaker_names (asset_id, speaker, name) VALUES (?, ?, ?)"
                " ON CONFLICT (asset_id, speaker) DO UPDATE SET name = excluded.name",
                (asset_id, speaker, name),
            )
