"""The text deltas between the provider's stream and a route client's response: bounded, so a client that
reads slowly (or never) holds the provider's stream instead of growing the server's memory.

The provider side :meth:`DeltaBuffer.put`\\ s each delta; past :data:`BUFFER_CHARS` waiting, ``put`` returns an
awaitable the stream awaits before it reads the provider further (the provider's socket then fills and
TCP slows the provider down). The response side takes deltas as the client's socket takes them (the server's
``send`` waits for a full socket). The end is put past the bound, so it is never lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

BUFFER_CHARS = 64_000
"""Text waiting for a slow client before the provider's stream is held."""


class DeltaBuffer:
    """A queue of deltas (``None``: the answer is over) with room for :data:`BUFFER_CHARS` of them."""

    def __init__(self, limit: int = BUFFER_CHARS) -> None:
        self._items: asyncio.Queue[str | None] = asyncio.Queue()
        self._limit = limit
        self._waiting = 0
        self._room = asyncio.Event()
        self._room.set()

    @property
    def waiting_chars(self) -> int:
        return self._waiting

    def put(self, delta: str) -> Awaitable[None] | None:
        """Queue ``delta``; when the buffer is now full, what to await before the next one."""
        self._items.put_nowait(delta)
        self._waiting += len(delta)
        if self._waiting < self._limit:
            return None
        self._room.clear()
        return self._wait_for_room()

    async def _wait_for_room(self) -> None:
        await self._room.wait()

    def end(self) -> None:
        self._items.put_nowait(None)

    async def get(self) -> str | None:
        return self._took(await self._items.get())

    def get_nowait(self) -> str | None:
        """The next item; raises ``asyncio.QueueEmpty`` when there is none."""
        return self._took(self._items.get_nowait())

    def empty(self) -> bool:
        return self._items.empty()

    def _took(self, item: str | None) -> str | None:
        if item is not None:
            self._waiting -= len(item)
            if self._waiting < self._limit:
                self._room.set()
        return item
