"""Personal API tokens for ``POST /api/agent/chat`` with sign-in on: made on the page and shown once, kept only
as a SHA-256 hash (a token is 256 random bits, so a plain hash cannot be searched back), revoked on the page."""

from __future__ import annotations

import hashlib
import secrets

from agent_app.storage.accounts import AccountStore
from agent_app.storage.models import ApiToken, Owner

TOKEN_PREFIX = "ass_"  # noqa: S105 - a marker before the random part, not a secret
"""Marks our tokens (in a log or a secret scanner) without saying anything about them."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.strip().encode()).hexdigest()


def make_api_token(accounts: AccountStore, owner: Owner, name: str) -> tuple[ApiToken, str]:
    """A new token of ``owner``'s: its record and the token itself, which is never stored or shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return accounts.add_api_token(owner, name, token_hash(token)), token


def token_owner(accounts: AccountStore, token: str) -> Owner | None:
    """Whose live token ``token`` is, if anyone's."""
    return accounts.api_token_owner(token_hash(token)) if token.startswith(TOKEN_PREFIX) else None
