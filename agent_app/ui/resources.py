"""Process-wide objects the page shares between sessions, built once with ``st.cache_resource``.

Storage is expensive or stateful to build and safe to share (it opens one SQLite connection per thread);
it is keyed by ``AGENT_DATA_DIR``, so changing it takes effect without a restart. The tool registry is
the one the route uses (:func:`agent_app.plugins.enabled_tool_registry`, built once per setting).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from agent_app.chat_clients import InProcessChatClient
from agent_app.plugins import enabled_tool_registry
from agent_app.registry import ToolRegistry
from agent_app.storage import SqliteStorage, Storage, data_dir_setting, open_storage
from agent_app.types import ChatClient


@st.cache_resource(show_spinner=False, max_entries=8)
def _storage_at(path: str) -> SqliteStorage:
    return open_storage(Path(path))


def get_storage() -> Storage:
    """The storage under ``AGENT_DATA_DIR`` (one instance per directory, shared by sessions)."""
    return _storage_at(str(data_dir_setting().resolve()))


def get_registry() -> ToolRegistry:
    """The enabled tools; raises ``ToolConfigurationError`` naming a misconfigured plugin."""
    return enabled_tool_registry()


def get_chat_client(registry: ToolRegistry) -> ChatClient:
    """The route handler called in-process (the page never makes an HTTP request to itself)."""
    return InProcessChatClient(registry)
