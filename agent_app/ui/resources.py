"""Process-wide objects the page shares between sessions, built once with ``st.cache_resource``.

Storage and the tool registry are expensive or stateful to build and safe to share (storage opens
one SQLite connection per thread; the registry is read-only). They are keyed by the settings that
shape them, so changing ``AGENT_DATA_DIR`` or ``AGENT_ENABLED_TOOLS`` takes effect without a restart.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from agent_app.chat_clients import InProcessChatClient
from agent_app.plugins import build_tool_registry, enabled_tool_names
from agent_app.registry import ToolRegistry
from agent_app.storage import SqliteStorage, Storage, data_dir_setting, open_storage
from agent_app.types import ChatClient


@st.cache_resource(show_spinner=False, max_entries=8)
def _storage_at(path: str) -> SqliteStorage:
    return open_storage(Path(path))


def get_storage() -> Storage:
    """The storage under ``AGENT_DATA_DIR`` (one instance per directory, shared by sessions)."""
    return _storage_at(str(data_dir_setting().resolve()))


@st.cache_resource(show_spinner=False, max_entries=8)
def _registry_of(names: tuple[str, ...]) -> ToolRegistry:
    return build_tool_registry(names)


def get_registry() -> ToolRegistry:
    """The enabled tools; raises ``ToolConfigurationError`` naming a misconfigured plugin."""
    return _registry_of(tuple(enabled_tool_names()))


def get_chat_client(registry: ToolRegistry) -> ChatClient:
    """The route handler called in-process (the page never makes an HTTP request to itself)."""
    return InProcessChatClient(registry)
