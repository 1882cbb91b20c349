"""The door of the page with sign-in on: nobody gets past it without a live sign-in, and then only as the owner
of their own projects. Without an ``[auth]`` section every session is ``LOCAL_OWNER``'s, as before sign-in existed.

Streamlit checks its cookie (signature, age, this app's origin) and fills ``st.user``; what it cannot know is
that a cookie was signed out, so each run asks the record of sign-ins too (a replayed copy is refused here).
A tampered, expired or replayed cookie all read as "signed out": the page offers to sign in again.
"""

from __future__ import annotations

from typing import NoReturn

import streamlit as st

from agent_app.settings import SIGN_IN_SECTION, Settings
from agent_app.sign_in.identity import SignedInUser, gets_pre_sign_in_projects, signed_in_user
from agent_app.storage import Storage

_GIVEN = "signin.pre_sign_in_given"
SIGNED_OUT_TEXT = "You are signed out. Sign in to see your projects."
REPLAYED_TEXT = "This sign-in has ended (you signed out). Sign in again to go on."


def _sign_in_page(text: str) -> NoReturn:
    st.title("Agent Session Shell", anchor=False)
    st.info(text, icon=":material/login:")
    st.button("Sign in", key="signin_button", type="primary", on_click=st.login)
    st.stop()


def page_user(settings: Settings, storage: Storage) -> SignedInUser | None:
    """Who is signed in (``None`` without sign-in: the page is :data:`~agent_app.storage.LOCAL_OWNER`'s); stops
    the run with a sign-in page for anyone not signed in, and with the problem for an unusable ``[auth]``."""
    if not settings.sign_in_on:
        return None
    problems = settings.problems_with(SIGN_IN_SECTION)
    if problems:
        st.title("Sign-in is not set up right", anchor=False)
        st.error(f"{'; '.join(problems)}. See docs/deploy.md.", icon=":material/lock:")
        st.stop()
    user = signed_in_user(st.user.to_dict())
    if user is None:
        _sign_in_page(SIGNED_OUT_TEXT)
    if not storage.accounts().sign_in_active(user.sign_in_id, user.owner):
        _sign_in_page(REPLAYED_TEXT)
    if not st.session_state.get(_GIVEN) and gets_pre_sign_in_projects(user, settings.pre_sign_in_owner):
        storage.give_unowned_projects(user.owner)
    st.session_state[_GIVEN] = True
    return user


def sign_out(storage: Storage, user: SignedInUser) -> None:
    """End this sign-in for good (in every replica: the record is in the database), then Streamlit's own
    sign-out (its cookie cleared, the provider's session ended when it offers that)."""
    storage.accounts().end_sign_in(user.sign_in_id, user.owner)
    st.logout()
