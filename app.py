"""What ``streamlit run app.py`` serves: the workspace page and, beside it, ``POST /api/agent/chat``."""

from __future__ import annotations

import streamlit as st

app = st.App("agent_app/ui/page.py")
