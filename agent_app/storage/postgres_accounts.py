"""Sign-ins and API token hashes, as rows of the PostgreSQL database
(:class:`~agent_app.storage.accounts.AccountStore`)."""

from __future__ import annotations

from agent_app.storage.base import NotFoundError
from agent_app.storage.models import ApiToken, Owner
from agent_app.storage.names import clean_name
from agent_app.storage.postgres_database import PostgresDatabase, row_as
from agent_app.types import new_id, now_ms


class PostgresAccountStore:
    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def sign_in_active(self, sign_in_id: str, owner: Owner) -> bool:
        """A read on every page run; a write only the first time a sign-in is seen."""
        select = "SELECT owner_issuer, owner_subject, signed_out_at FROM sign_ins WHERE id = %s"
        row = self._db.one(select, (sign_in_id,))
        if row is None:
            with self._db.write() as db:
                db.execute(
                    "INSERT INTO sign_ins (id, owner_issuer, owner_subject, created_at) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (id) DO NOTHING",
                    (sign_in_id, owner.issuer, owner.subject, now_ms()),
                )
                row = db.execute(select, (sign_in_id,)).fetchone()
        return (
            row is not None
            and row["signed_out_at"] is None
            and (row["owner_issuer"], row["owner_subject"]) == (owner.issuer, owner.subject)
        )

    def sign_in_live(self, sign_in_id: str) -> bool:
        row = self._db.one("SELECT signed_out_at IS NULL AS live FROM sign_ins WHERE id = %s", (sign_in_id,))
        return bool(row and row["live"])

    def end_sign_in(self, sign_in_id: str, owner: Owner) -> None:
        now = now_ms()
        with self._db.write() as db:
            db.execute(
                "INSERT INTO sign_ins (id, owner_issuer, owner_subject, created_at, signed_out_at)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
                " signed_out_at = COALESCE(sign_ins.signed_out_at, excluded.signed_out_at)",
                (sign_in_id, owner.issuer, owner.subject, now, now),
            )

    def add_api_token(self, owner: Owner, name: str, token_hash: str) -> ApiToken:
        token = ApiToken(id=new_id(), name=clean_name(name, "API token"), created_at=now_ms())
        with self._db.write() as db:
            db.execute(
                "INSERT INTO api_tokens (id, owner_issuer, owner_subject, name, token_hash, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (token.id, owner.issuer, owner.subject, token.name, token_hash, token.created_at),
            )
        return token

    def list_api_tokens(self, owner: Owner) -> list[ApiToken]:
        rows = self._db.all(
            "SELECT id, name, created_at FROM api_tokens WHERE owner_issuer = %s AND owner_subject = %s"
            " AND revoked_at IS NULL ORDER BY created_at, id",
            (owner.issuer, owner.subject),
        )
        return [row_as(ApiToken, row) for row in rows]

    def revoke_api_token(self, owner: Owner, token_id: str) -> None:
        with self._db.write() as db:
            cursor = db.execute(
                "UPDATE api_tokens SET revoked_at = %s WHERE id = %s AND owner_issuer = %s AND owner_subject = %s"
                " AND revoked_at IS NULL",
                (now_ms(), token_id, owner.issuer, owner.subject),
            )
            if cursor.rowcount != 1:
                raise NotFoundError("This API token no longer exists (it was revoked)")

    def api_token_owner(self, token_hash: str) -> Owner | None:
        row = self._db.one(
            "SELECT owner_issuer, owner_subject FROM api_tokens WHERE token_hash = %s AND revoked_at IS NULL",
            (token_hash,),
        )
        return Owner(issuer=row["owner_issuer"], subject=row["owner_subject"]) if row else None
