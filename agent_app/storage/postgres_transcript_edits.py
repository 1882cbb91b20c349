"""The user's transcript edits in PostgreSQL (see :mod:`agent_app.storage.sqlite_transcript_edits`)."""

from __future__ import annotations

from agent_app.storage.base import NotFoundError
from agent_app.storage.postgres_database import PostgresDatabase
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits
from agent_app.types import now_ms


class PostgresTranscriptEditRows:
    """The transcript-edit part of :class:`~agent_app.storage.postgres.PostgresStorage`."""

    _db: PostgresDatabase

    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        corrections = self._db.all(
            "SELECT start_ms, original_text, text FROM transcript_corrections WHERE asset_id = %s ORDER BY start_ms",
            (asset_id,),
        )
        names = self._db.all("SELECT speaker, name FROM speaker_names WHERE asset_id = %s", (asset_id,))
        return TranscriptEdits(
            corrections=[
                SegmentCorrection(start_ms=r["start_ms"], original=r["original_text"], text=r["text"])
                for r in corrections
            ],
            speaker_names={str(r["speaker"]): str(r["name"]) for r in names},
        )

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None:
        with self._db.write() as db:
            if db.execute("SELECT 1 FROM assets WHERE id = %s", (asset_id,)).fetchone() is None:
                raise NotFoundError(f"No asset {asset_id}")
            db.execute(
                "INSERT INTO transcript_corrections (asset_id, start_ms, original_text, text, updated_at)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (asset_id, start_ms) DO UPDATE SET"
                " original_text = excluded.original_text, text = excluded.text, updated_at = excluded.updated_at",
                (asset_id, correction.start_ms, _no_nul(correction.original), _no_nul(correction.text), now_ms()),
            )

    def remove_correction(self, asset_id: str, start_ms: int) -> None:
        with self._db.write() as db:
            db.execute("DELETE FROM transcript_corrections WHERE asset_id = %s AND start_ms = %s", (asset_id, start_ms))

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None:
        with self._db.write() as db:
            if not name:
                db.execute("DELETE FROM speaker_names WHERE asset_id = %s AND speaker = %s", (asset_id, speaker))
                return
            if db.execute("SELECT 1 FROM assets WHERE id = %s", (asset_id,)).fetchone() is None:
                raise NotFoundError(f"No asset {asset_id}")
            db.execute(
                "INSERT INTO speaker_names (asset_id, speaker, name) VALUES (%s, %s, %s)"
                " ON CONFLICT (asset_id, speaker) DO UPDATE SET name = excluded.name",
                (asset_id, speaker, _no_nul(name)),
            )


def _no_nul(text: str) -> str:
    return text.replace("\x00", "")  # PostgreSQL text holds no NUL
