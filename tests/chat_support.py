"""The chat path's entries as tests call them: the client a run's orchestrator sends through; the route
over Starlette's ``TestClient`` (the real endpoint: access check, body limit, concurrency slot, handler,
status); and an adapter's one streamed request on the calling thread's own loop, as a run's worker runs it."""

from __future__ import annotations

import atexit
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from agent_app.chat_handler import ChatHandler
from agent_app.providers import ProviderAdapter
from agent_app.providers.provider_loop import TextSink, run_streaming
from agent_app.registry import ToolRegistry
from agent_app.routes.chat import ROUTE_PATH, chat_routes
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatResponse, ToolSchema

LOOPBACK = ("127.0.0.1", 50000)
"""Where the test client's requests come from: a direct loopback client, which the route serves."""


@dataclass(frozen=True)
class RouteAnswer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


@functools.cache
def _route_client() -> TestClient:
    """One client, so one event loop for every route request of the test process, as a server has: the SDK
    clients the adapters keep per loop (with their connections) are never left on a closed loop."""
    client = TestClient(Starlette(routes=chat_routes()), base_url="http://127.0.0.1:8501", client=LOOPBACK)
    client.__enter__()
    atexit.register(client.__exit__)
    return client


def post_chat(body: bytes, headers: dict[str, str] | None = None) -> RouteAnswer:
    """``POST /api/agent/chat`` with ``body``, answered by the real endpoint."""
    response = _route_client().post(ROUTE_PATH, content=body, headers=headers or {"Content-Type": "application/json"})
    return RouteAnswer(response.status_code, response.json(), dict(response.headers))


def stream_answer(
    adapter: ProviderAdapter,
    messages: Sequence[ChatMessage],
    *,
    system_prompt: str = "",
    tool_schemas: Sequence[ToolSchema] = (),
    on_text: TextSink | None = None,
) -> ChatResponse:
    """``adapter.stream`` on this thread's own event loop (:func:`run_streaming`)."""
    return run_streaming(
        lambda sink: adapter.stream(messages, system_prompt=system_prompt, tool_schemas=tool_schemas, on_text=sink),
        on_text=on_text,
    )


def in_process_client(registry: ToolRegistry | None = None) -> ChatHandler:
    """The client a run's orchestrator sends through, with the settings now, offering ``registry``'s tools
    (default: the enabled tools)."""
    return ChatHandler(load_settings(), registry.to_tool_schemas() if registry is not None else None)
