"""What ``streamlit run app.py`` serves: the workspace page and, beside it, ``POST /api/agent/chat``.

The route is mounted on Streamlit's own ASGI server, so one process serves both; the page itself does not
use HTTP (its chat client calls the same handler in-process).
"""

from __future__ import annotations

import streamlit as st
from starlette.routing import Route

from agent_app.api import ROUTE_PATH, chat_endpoint

app = st.App("agent_app/ui/page.py", routes=[Route(ROUTE_PATH, chat_endpoint, methods=["POST"])])
