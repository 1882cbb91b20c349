"""The fake LLM server in a process of its own, for benches that time a client.

Why: in the client's process the server's threads share its GIL, so every request's timing includes waiting
for the server's Python code and the process's CPU time includes the server's work. A real model runs
elsewhere; so does this one, and what a bench measures in its own process is the client alone.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType

from fake_llm.server import FakeLLMServer

Setup = Callable[[FakeLLMServer], None]
"""Scripts the server once it runs (a module-level function: it is sent to the other process by name)."""


@dataclass(frozen=True)
class BaseURLs:
    """Where the server in the other process answers (the same attributes as :class:`FakeLLMServer`'s)."""

    openai_base_url: str
    gemini_base_url: str
    pid: int
    """The server process's id (a bench reads its CPU time)."""


def _serve(ready: Connection, stop: EventType, setup: Setup) -> None:
    with FakeLLMServer() as server:
        setup(server)
        ready.send(BaseURLs(server.openai_base_url, server.gemini_base_url, os.getpid()))
        stop.wait()


@contextmanager
def server_process(setup: Setup) -> Iterator[BaseURLs]:
    """A fake LLM server scripted by ``setup``, running in a process of its own until the block ends."""
    context = multiprocessing.get_context("spawn")
    ready, sender = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(target=_serve, args=(sender, stop, setup), daemon=True)
    server.start()
    try:
        urls: BaseURLs = ready.recv()
        yield urls
    finally:
        stop.set()
        server.join(10)
