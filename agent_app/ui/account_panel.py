"""The sidebar's account section with sign-in on: who is signed in, **Sign out**, and the personal API tokens
for ``POST /api/agent/chat`` (made here and shown once, listed by name, revoked here)."""

from __future__ import annotations

import streamlit as st

from agent_app.sign_in.api_tokens import make_api_token
from agent_app.sign_in.identity import SignedInUser
from agent_app.storage import NotFoundError, Storage, StorageError
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.sign_in_gate import sign_out

_NEW_TOKEN = "account.shown_once"  # noqa: S105 - a session state key
"""The token just made, shown until dismissed: only in this session's memory, never stored."""


def _make_token(storage: Storage, user: SignedInUser) -> None:
    name = str(st.session_state.get("account_token_name", "")).strip()
    try:
        _, token = make_api_token(storage.accounts(), user.owner, name)
    except StorageError as exc:
        st.session_state["account_error"] = f"The token could not be made: {exc}"
        return
    st.session_state[_NEW_TOKEN] = token
    st.session_state["account_token_name"] = ""


def _revoke(storage: Storage, user: SignedInUser, token_id: str) -> None:
    try:
        storage.accounts().revoke_api_token(user.owner, token_id)
    except (NotFoundError, StorageError) as exc:
        st.session_state["account_error"] = f"The token could not be revoked: {exc}"


def render_account(storage: Storage, user: SignedInUser) -> None:
    st.caption(f"Signed in as **{escape_markdown(user.name)}**")
    st.button("Sign out", key="account_sign_out", icon=":material/logout:", on_click=sign_out, args=(storage, user))
    with st.expander("API tokens", icon=":material/key:"):
        st.caption("For POST /api/agent/chat: send `Authorization: Bearer <token>`.")
        error = st.session_state.pop("account_error", None)
        if error:
            st.error(error)
        token = st.session_state.get(_NEW_TOKEN)
        if token:
            st.success("Your new token. Copy it now: it is not shown again.")
            st.code(token, language=None)
            st.button("Done", key="account_token_done", on_click=lambda: st.session_state.pop(_NEW_TOKEN, None))
        st.text_input("Token name", key="account_token_name", placeholder="e.g. laptop script")
        st.button("Make token", key="account_make_token", on_click=_make_token, args=(storage, user))
        for listed in storage.accounts().list_api_tokens(user.owner):
            left, right = st.columns([3, 1], vertical_alignment="center")
            left.write(escape_markdown(listed.name))
            right.button("Revoke", key=f"account_revoke_{listed.id}", on_click=_revoke, args=(storage, user, listed.id))
