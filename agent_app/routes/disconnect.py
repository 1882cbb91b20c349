"""A route's client that leaves cancels the work it asked for, in every phase of the answer.

Why: a model request runs until its provider finishes; a client that closed its connection while the
provider was still to send its headers, its first byte or the rest of the stream would otherwise hold the
provider call and its slot of ``AGENT_MAX_CONCURRENT_CHATS`` to the end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive


async def cancel_on_disconnect(receive: Receive, task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` once the client disconnects. The request body was read already, so the next ASGI
    message is the disconnect; one watcher per request, as ASGI allows one reader of ``receive``."""
    while (await receive())["type"] != "http.disconnect":
        pass
    task.cancel()


def watch_disconnect(receive: Receive, task: asyncio.Task[Any]) -> asyncio.Task[None]:
    """The watcher task of :func:`cancel_on_disconnect`; the caller cancels it when the response is over."""
    return asyncio.create_task(cancel_on_disconnect(receive, task))
