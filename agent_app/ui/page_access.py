"""Whether this page serves the browser that opened it: the decision of
:func:`~agent_app.routes.access.page_refusal`, from what Streamlit knows of the session's connection.

``st.context.ip_address`` is the websocket's TCP peer, except that Streamlit reports a loopback peer
(``127.0.0.1``, ``::1``) as ``None``; it is ``None`` too when there is no connection at all, and no text
under AppTest (whose runtime is a stand-in): both are this machine as well. ``st.context.headers`` are the
websocket handshake's headers (proxy headers, ``Host``, ``Origin``, ``Sec-Fetch-Site``).
"""

from __future__ import annotations

import streamlit as st

from agent_app.routes.access import page_refusal
from agent_app.settings import Settings

LOOPBACK_PEER = "127.0.0.1"
REMOTE_PAGE_WARNING = (
    "This workspace is open to other machines (AGENT_ALLOW_REMOTE_PAGE is on) and has no sign-in: anyone who"
    " can reach it sees every conversation and media file and asks questions on the owner's API key."
)


def client_address() -> str | None:
    """The browser's address as the server's socket saw it (a loopback one when Streamlit says ``None``)."""
    address = st.context.ip_address
    return address if isinstance(address, str) else LOOPBACK_PEER


def guard_page(settings: Settings) -> None:
    """Stop the run with the reason for a browser the page does not serve; warn while it serves any."""
    refusal = page_refusal(dict(st.context.headers.items()), client_address(), settings)
    if refusal is not None:
        st.title("Not available from this machine", anchor=False)
        st.error(refusal, icon=":material/lock:")
        st.stop()
    if settings.allow_remote_page and not settings.sign_in_on:
        st.warning(REMOTE_PAGE_WARNING, icon=":material/public:")
