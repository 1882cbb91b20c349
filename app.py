"""What ``streamlit run app.py`` serves: the workspace page and, beside it, ``POST /api/agent/chat`` and
``GET /api/media/{asset_id}`` (the player's media, streamed with range support).

The routes are mounted on Streamlit's own ASGI server, so one process serves everything; the page itself
does not use HTTP for the chat (its chat client calls the same handler in-process).
"""

from __future__ import annotations

import streamlit as st

from agent_app.routes.chat import chat_routes
from agent_app.routes.media import media_routes

app = st.App(
    "agent_app/ui/page_script.py",
    routes=[*chat_routes(), *media_routes()],
)
