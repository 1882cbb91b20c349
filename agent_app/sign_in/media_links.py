"""The player's media URLs carry their own short-lived signature, so ``GET /api/media/...`` needs no session and
serves nothing unsigned: ``?signin=<the sign-in>&expires=<unix seconds>&signature=<HMAC-SHA256 of the three>``.
The route also checks that the sign-in has not been signed out, so signing out ends access to media at once.

A URL lives ``AGENT_MEDIA_URL_SECONDS`` (the object store's presigned URLs live as long) to half as long again:
its expiry is rounded up to a step of half the lifetime, so the page draws the same URL for a while (the player
does not reload on every rerun). When a URL has run out the player's read fails, it asks the page for a fresh
one and carries on where it was (:mod:`agent_app.ui.player_element`). The key is derived from the ``[auth]``
cookie secret (the same in every replica). Without sign-in there is no signature: the page and its media serve
only this machine, as before (:func:`~agent_app.routes.access.page_refusal`).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from agent_app.settings import Settings


@dataclass(frozen=True)
class MediaSigner:
    """Signs and checks media URLs with one key."""

    key: bytes
    lifetime_seconds: int

    @classmethod
    def for_settings(cls, settings: Settings) -> MediaSigner | None:
        """The signer with sign-in on, ``None`` without."""
        if settings.sign_in is None:
            return None
        secret = settings.sign_in.cookie_secret.encode()
        key = hmac.new(secret, b"agent-session-shell media URL", hashlib.sha256).digest()
        return cls(key, settings.media_url_seconds)

    def signature(self, asset_id: str, sign_in_id: str, expires: int) -> str:
        message = f"{asset_id}\n{sign_in_id}\n{expires}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def expiry(self, now: float | None = None) -> int:
        """When a URL made now runs out: the lifetime from now, rounded up to a step of half the lifetime."""
        moment = time.time() if now is None else now
        step = max(1, self.lifetime_seconds // 2)
        return math.ceil((moment + self.lifetime_seconds) / step) * step

    def query(self, asset_id: str, sign_in_id: str, now: float | None = None) -> tuple[str, int]:
        """The URL query that signs ``asset_id`` for ``sign_in_id`` now, and its expiry."""
        expires = self.expiry(now)
        signature = self.signature(asset_id, sign_in_id, expires)
        return f"signin={sign_in_id}&expires={expires}&signature={signature}", expires

    def valid(self, asset_id: str, query: Mapping[str, str], now: float | None = None) -> str | None:
        """The sign-in a URL's query was signed for, when the signature is ours for this asset, sign-in and
        expiry and the expiry has not passed; else ``None``."""
        sign_in_id, expires, signature = (query.get(name) for name in ("signin", "expires", "signature"))
        if not sign_in_id or not expires or not signature or not expires.isdigit() or len(expires) > 12:
            return None
        moment = time.time() if now is None else now
        if int(expires) <= moment:
            return None
        wanted = self.signature(asset_id, sign_in_id, int(expires))
        return sign_in_id if hmac.compare_digest(signature.encode(), wanted.encode()) else None


@dataclass(frozen=True)
class MediaSigning:
    """What the page signs its media URLs with: the signer and the session's sign-in."""

    signer: MediaSigner
    sign_in_id: str

    @classmethod
    def for_page(cls, settings: Settings, sign_in_id: str | None) -> MediaSigning | None:
        """With sign-in on and someone signed in, their signing; else ``None`` (unsigned URLs)."""
        signer = MediaSigner.for_settings(settings)
        return cls(signer, sign_in_id) if signer is not None and sign_in_id is not None else None
