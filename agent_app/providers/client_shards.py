"""Several SDK clients of one event loop, each with its own connection pool, shared by the loop's requests.

Why: the HTTP client under both SDKs (``httpx2``'s connection pool) goes over every connection of its pool
each time a request starts or a response is closed, and asks the socket of each idle one whether the server
closed it (a ``poll`` system call). With ``n`` connections that is ``n`` checks per request, so ``n``
concurrent streamed answers cost in the order of ``n * n`` checks. Pools of at most
:data:`REQUESTS_PER_CLIENT` requests keep each pass short: at 100 concurrent chats the server's CPU per chat
went from 4.45 to 3.40 ms (``bench_streaming --only 2 --runs 10``, median of each).

How requests are spread: a request goes to the first client with fewer than :data:`REQUESTS_PER_CLIENT`
requests in flight, so one request at a time always uses the first client and its warm connections (no new
connection, no new TLS handshake, when a single pool would not need one either), and a burst fills the
clients in the same order each time, each client reusing its own idle connections. Past
:data:`MAX_CLIENTS` the least busy client takes the request. Counted on the loop only (no lock): the
clients of one event loop serve that loop's requests alone (:class:`LoopClients`: one set per loop).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

REQUESTS_PER_CLIENT = 8
"""Requests in flight on one client before the next client takes new ones."""

MAX_CLIENTS = 32
"""Clients per event loop at most: 256 requests (``AGENT_MAX_CONCURRENT_CHATS``'s default) before two
requests share a client beyond :data:`REQUESTS_PER_CLIENT`."""

ClientT = TypeVar("ClientT")


class ClientShards(Generic[ClientT]):
    """The clients of one event loop, made on demand by ``make``; :meth:`lease` one for each request."""

    def __init__(self, make: Callable[[], ClientT]) -> None:
        self._make = make
        self._clients: list[ClientT] = [make()]
        self._in_flight: list[int] = [0]

    @property
    def first(self) -> ClientT:
        """The client that serves requests one at a time."""
        return self._clients[0]

    @property
    def clients(self) -> tuple[ClientT, ...]:
        """Every client made so far, in the order requests fill them."""
        return tuple(self._clients)

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Requests in flight on each client."""
        return tuple(self._in_flight)

    @contextmanager
    def lease(self) -> Iterator[ClientT]:
        """A client for one request, counted as in flight until the block ends (the response closed)."""
        index = self._pick()
        self._in_flight[index] += 1
        try:
            yield self._clients[index]
        finally:
            self._in_flight[index] -= 1

    def _pick(self) -> int:
        for index, count in enumerate(self._in_flight):
            if count < REQUESTS_PER_CLIENT:
                return index
        if len(self._clients) < MAX_CLIENTS:
            self._clients.append(self._make())
            self._in_flight.append(0)
            return len(self._clients) - 1
        return min(range(len(self._in_flight)), key=self._in_flight.__getitem__)


class LoopClients(Generic[ClientT]):
    """The :class:`ClientShards` of each event loop (an async client's connections belong to the loop that
    opened them), made on first use in that loop and dropped with the loop. Shared between threads."""

    def __init__(self, make: Callable[[], ClientT]) -> None:
        self._make = make
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientShards[ClientT]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def current(self) -> ClientShards[ClientT]:
        """The clients of the running event loop."""
        loop = asyncio.get_running_loop()
        shards = self._by_loop.get(loop)
        if shards is None:
            with self._lock:
                shards = self._by_loop.get(loop)
                if shards is None:
                    shards = ClientShards(self._make)
                    self._by_loop[loop] = shards
        return shards
