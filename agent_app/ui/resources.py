"""Process-wide objects the page shares between sessions and with the routes.

Storage (:func:`agent_app.storage.open_storage`, one instance per ``AGENT_DATA_DIR``) and the tool
registry (:func:`agent_app.plugins.enabled_tool_registry`, built once per setting) are the ones the
routes use, so a changed setting takes effect without a restart.
"""

from __future__ import annotations

from agent_app.chat_clients import InProcessChatClient
from agent_app.plugins import enabled_tool_registry
from agent_app.registry import ToolRegistry
from agent_app.settings import Settings
from agent_app.storage import Storage, open_storage
from agent_app.types import ChatClient


def get_storage(settings: Settings) -> Storage:
    """The storage under ``AGENT_DATA_DIR`` (one instance per directory, shared by sessions)."""
    return open_storage(settings)


def get_registry(settings: Settings) -> ToolRegistry:
    """The enabled tools; raises ``ToolConfigurationError`` naming a misconfigured plugin."""
    return enabled_tool_registry(settings.enabled_tools)


def get_chat_client(registry: ToolRegistry, settings: Settings) -> ChatClient:
    """The route handler called in-process (the page never makes an HTTP request to itself)."""
    return InProcessChatClient(registry, settings)
