"""Projects and their scenes, as rows of the SQLite database."""

from __future__ import annotations

import sqlite3

from agent_app.storage.base import PROJECT_GONE, SCENE_GONE, NotFoundError
from agent_app.storage.media_store import MediaStore
from agent_app.storage.models import LOCAL_OWNER, Owner, Project, Scene
from agent_app.storage.names import clean_name
from agent_app.storage.sqlite_database import SqliteDatabase, row_as
from agent_app.types import new_id, now_ms


def require_project(db: sqlite3.Connection, project_id: str) -> None:
    """Raise :class:`NotFoundError` unless the project exists (inside a write: checked in the transaction)."""
    if db.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
        raise NotFoundError(PROJECT_GONE)


class ProjectRows:
    """The project and scene part of :class:`~agent_app.storage.sqlite.SqliteStorage`."""

    _db: SqliteDatabase
    _media_store: MediaStore

    def create_project(self, name: str, owner: Owner = LOCAL_OWNER) -> Project:
        project = Project(
            id=new_id(),
            name=clean_name(name, "Untitled project"),
            created_at=now_ms(),
            owner_issuer=owner.issuer,
            owner_subject=owner.subject,
        )
        with self._db.write() as db:
            db.execute(
                "INSERT INTO projects (id, name, created_at, owner_issuer, owner_subject) VALUES (?, ?, ?, ?, ?)",
                (project.id, project.name, project.created_at, owner.issuer, owner.subject),
            )
        return project

    def get_project(self, project_id: str) -> Project | None:
        row = self._db.connection().execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
        return row_as(Project, row) if row else None

    def list_projects(self, owner: Owner = LOCAL_OWNER) -> list[Project]:
        """``owner``'s projects, oldest first."""
        rows = (
            self._db.connection()
            .execute(
                "SELECT * FROM projects WHERE owner_issuer = ? AND owner_subject = ? ORDER BY created_at, id",
                (owner.issuer, owner.subject),
            )
            .fetchall()
        )
        return [row_as(Project, row) for row in rows]

    def give_unowned_projects(self, owner: Owner) -> int:
        """Make every project of nobody (:data:`LOCAL_OWNER`: made before sign-in) ``owner``'s; how many."""
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE projects SET owner_issuer = ?, owner_subject = ?"
                " WHERE owner_issuer = '' AND owner_subject = ''",
                (owner.issuer, owner.subject),
            )
            return int(cursor.rowcount)

    def rename_project(self, project_id: str, name: str) -> Project:
        sql = "UPDATE projects SET name = ? WHERE id = ? RETURNING *"
        row = self._update_one(sql, (clean_name(name, "Untitled project"), project_id), PROJECT_GONE)
        return row_as(Project, row)

    def delete_project(self, project_id: str) -> None:
        """Delete the project's media files, then forget the project and, by the schema's cascade, its scenes,
        assets, conversations, messages and runs. A media store out of reach refuses with the project kept
        (as a removed asset is: a row left without its file shows as missing and can be removed again)."""
        if self.get_project(project_id) is None:
            raise NotFoundError(PROJECT_GONE)
        sql = "SELECT file_name FROM assets WHERE project_id = ?"
        for stored_name in [str(row[0]) for row in self._db.connection().execute(sql, (project_id,)).fetchall()]:
            self._media_store.delete(stored_name)
        with self._db.write() as db:
            if db.execute("DELETE FROM projects WHERE id = ?", (project_id,)).rowcount == 0:
                raise NotFoundError(PROJECT_GONE)

    def create_scene(self, project_id: str, name: str) -> Scene:
        with self._db.write() as db:
            require_project(db, project_id)
            position = int(
                db.execute(
                    "SELECT COALESCE(MAX(position), -1) + 1 FROM scenes WHERE project_id = ?", (project_id,)
                ).fetchone()[0]
            )
            scene = Scene(
                id=new_id(),
                project_id=project_id,
                name=clean_name(name, f"Scene {position + 1}"),
                position=position,
                created_at=now_ms(),
            )
            db.execute(
                "INSERT INTO scenes (id, project_id, name, position, created_at) VALUES (?, ?, ?, ?, ?)",
                (scene.id, scene.project_id, scene.name, scene.position, scene.created_at),
            )
        return scene

    def get_scene(self, scene_id: str) -> Scene | None:
        row = self._db.connection().execute("SELECT * FROM scenes WHERE id = ?", (scene_id,)).fetchone()
        return row_as(Scene, row) if row else None

    def list_scenes(self, project_id: str) -> list[Scene]:
        rows = (
            self._db.connection()
            .execute("SELECT * FROM scenes WHERE project_id = ? ORDER BY position", (project_id,))
            .fetchall()
        )
        return [row_as(Scene, row) for row in rows]

    def rename_scene(self, scene_id: str, name: str) -> Scene:
        """A blank ``name`` keeps the scene's name."""
        sql = "UPDATE scenes SET name = COALESCE(NULLIF(?, ''), name) WHERE id = ? RETURNING *"
        return row_as(Scene, self._update_one(sql, (clean_name(name, ""), scene_id), SCENE_GONE))

    def _update_one(self, sql: str, params: tuple[str, ...], missing: str) -> sqlite3.Row:
        """The row ``sql`` (an ``UPDATE ... RETURNING *``) changed; :class:`NotFoundError` when there was none."""
        with self._db.write() as db:
            row: sqlite3.Row | None = db.execute(sql, params).fetchone()
        if row is None:
            raise NotFoundError(missing)
        return row
