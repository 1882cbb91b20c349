"""What sign-in keeps in the database beside the work: the record of sign-ins (Streamlit's own cookie is never
revoked on the server, so a copy replayed after sign-out must be refused here) and the hashes of personal API
tokens. One interface, a SQLite and a PostgreSQL implementation, reached through ``Storage.accounts()``."""

from __future__ import annotations

from typing import Protocol

from agent_app.storage.models import ApiToken, Owner


class AccountStore(Protocol):
    """Sign-ins and API tokens of the owners (issuer + subject) of projects."""

    def sign_in_active(self, sign_in_id: str, owner: Owner) -> bool:
        """Record ``sign_in_id`` (one sign-in's cookie) as ``owner``'s when it is new; ``False`` once it was
        signed out (the cookie is a replayed copy), or when it belongs to someone else."""
        ...

    def sign_in_live(self, sign_in_id: str) -> bool:
        """Whether ``sign_in_id`` was recorded and has not been signed out (a read only)."""
        ...

    def end_sign_in(self, sign_in_id: str, owner: Owner) -> None:
        """Sign-out: ``sign_in_id`` is refused from now on, in every replica."""
        ...

    def add_api_token(self, owner: Owner, name: str, token_hash: str) -> ApiToken: ...

    def list_api_tokens(self, owner: Owner) -> list[ApiToken]:
        """``owner``'s tokens not revoked, oldest first."""
        ...

    def revoke_api_token(self, owner: Owner, token_id: str) -> None:
        """:class:`~agent_app.storage.base.NotFoundError` unless it is ``owner``'s and not revoked yet."""
        ...

    def api_token_owner(self, token_hash: str) -> Owner | None:
        """Whose live token has this hash, if anyone's."""
        ...
