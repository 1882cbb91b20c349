"""The one event loop every model request runs on, and the two ways in: from a thread, or from another loop.

Why: a streamed model answer is mostly waiting. On the SDKs' async clients hundreds of them cost one
thread, where blocking calls would each hold one (and the HTTP route, in the server's shared worker pool,
made the page and the media wait). The adapters' streaming code therefore exists once, as a coroutine, and
runs here for callers in threads (the page, a run's executor), which block in :func:`run_streaming`; a caller
that has a loop of its own (the HTTP route) awaits the coroutine there instead.

The coroutine reports each text delta to a sink as it arrives; :func:`run_streaming` hands the deltas on in
the caller's own thread, in order and before the answer, so a slow ``on_text`` (a database write) never
holds up the other streams. Stopping cancels the coroutine, which closes the provider's HTTP response
(not read to the end).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeAlias, TypeVar

from agent_app.types import CancelSignal

T = TypeVar("T")

TextSink: TypeAlias = Callable[[str], None]
"""Receives each text delta of the answer as it arrives."""

StreamStart: TypeAlias = Callable[[TextSink], Coroutine[Any, Any, T]]
"""Starts the streamed request, given where its text deltas go."""

CANCEL_POLL_SECONDS = 0.02
"""How often a waiting caller looks at its cancel signal: the longest a Stop waits to take effect."""

CLOSE_WAIT_SECONDS = 2.0
"""How long a stopped call waits for the cancelled request to close its connection."""


class RequestCancelledError(Exception):
    """The caller's cancel signal stopped the request; ``partial_text`` is what had arrived by then."""

    def __init__(self, partial_text: str = "") -> None:
        super().__init__("the request was cancelled")
        self.partial_text = partial_text


_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()
_END = object()


def provider_loop() -> asyncio.AbstractEventLoop:
    """The running provider loop, started in a daemon thread on first use."""
    global _loop  # noqa: PLW0603 - one loop per process, created lazily
    if _loop is not None:
        return _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="provider-loop", daemon=True).start()
            ready.wait()
            _loop = loop
    return _loop


def _discard(delta: str) -> None:
    """The sink of a caller that does not show text as it arrives."""


def run_streaming(start: StreamStart[T], *, on_text: TextSink | None = None, cancel: CancelSignal | None = None) -> T:
    """Run ``start`` on the provider loop and wait for its answer, calling ``on_text`` in this thread with
    each delta. When ``cancel`` is set the request is cancelled (its response closed) and
    :class:`RequestCancelledError` is raised with the text received so far; an exception of ``on_text`` also
    cancels the request, then propagates."""
    deltas: queue.SimpleQueue[object] = queue.SimpleQueue()

    async def run() -> T:
        try:
            return await start(deltas.put)
        finally:
            deltas.put(_END)

    future = asyncio.run_coroutine_threadsafe(run(), provider_loop())
    received: list[str] = []
    try:
        while True:
            try:
                item = deltas.get(timeout=CANCEL_POLL_SECONDS if cancel is not None else None)
            except queue.Empty:
                item = None
            if cancel is not None and cancel.is_set():
                raise RequestCancelledError("".join(received))
            if item is _END:
                return future.result()
            if isinstance(item, str):
                received.append(item)
                if on_text is not None:
                    on_text(item)
    except BaseException:
        if not future.done():
            future.cancel()
            _wait_for_end(deltas)
        raise


def _wait_for_end(deltas: queue.SimpleQueue[object]) -> None:
    """Wait (bounded) until the cancelled coroutine has finished, its HTTP response closed."""
    try:
        while deltas.get(timeout=CLOSE_WAIT_SECONDS) is not _END:
            pass
    except queue.Empty:
        pass
