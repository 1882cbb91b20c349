"""Who is signed in, from what ``st.user`` holds (the ID token's claims Streamlit keeps in its signed cookie).

A sign-in is named by its ID token's own claims (issuer, subject, audience, issue time, nonce): every copy of
one cookie names the same sign-in, and signing in again names a new one. Streamlit never revokes its cookie on
the server, so the record of sign-ins (:class:`~agent_app.storage.accounts.AccountStore`) is what makes
sign-out final.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from agent_app.storage.models import Owner

_SIGN_IN_CLAIMS = ("iss", "sub", "aud", "iat", "nonce", "auth_time", "sid")


@dataclass(frozen=True)
class SignedInUser:
    """The person of a session: the owner of their projects, this sign-in's id and how to greet them."""

    owner: Owner
    sign_in_id: str
    name: str
    email: str | None
    email_verified: bool


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def signed_in_user(user_info: Mapping[str, object]) -> SignedInUser | None:
    """The user of a cookie Streamlit accepted (signature and age checked, its origin this app's), or ``None``
    when nobody is signed in or the claims lack an issuer or a subject (then nobody can own anything)."""
    if user_info.get("is_logged_in") is not True:
        return None
    issuer, subject = _text(user_info.get("iss")), _text(user_info.get("sub"))
    if issuer is None or subject is None:
        return None
    facts = {claim: user_info.get(claim) for claim in _SIGN_IN_CLAIMS}
    sign_in_id = hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()
    email = _text(user_info.get("email"))
    return SignedInUser(
        owner=Owner(issuer=issuer, subject=subject),
        sign_in_id=sign_in_id,
        name=_text(user_info.get("name")) or email or subject,
        email=email,
        email_verified=user_info.get("email_verified") is True,
    )


def gets_pre_sign_in_projects(user: SignedInUser, pre_sign_in_owner: str | None) -> bool:
    """Whether ``user`` is the account ``AGENT_PRE_SIGN_IN_OWNER`` names: the same email (any case), verified
    by the provider (an unverified address could be anyone's)."""
    return (
        pre_sign_in_owner is not None
        and user.email is not None
        and user.email_verified
        and user.email.strip().lower() == pre_sign_in_owner.strip().lower()
    )
