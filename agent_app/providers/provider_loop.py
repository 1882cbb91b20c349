"""Where a model request's coroutine runs: for a caller in a thread, on that thread's own event loop.

Why: the adapters' streaming code exists once, as a coroutine on the SDKs' async clients (so the HTTP
route can await hundreds of answers on one loop, no thread each). A caller in a thread (a run's executor
worker, a test, a bench) blocks until its answer anyway, so :func:`run_streaming` runs the coroutine right
there, on a loop the thread keeps for its life: text deltas reach ``on_text`` directly as they arrive, and
the SDK client the adapter keeps per loop, with its open connections, serves the thread's next requests.
(One shared loop thread would save no thread and add a thread hand-off to every model request.)
A caller that has a loop of its own (the HTTP route) awaits the coroutine on it instead;
:func:`run_streaming` refuses to nest inside a running loop.

Stop: the run's :class:`~agent_app.cancellation.Cancellation`, set from any thread, cancels the request's
task on this loop at once, which closes the provider's HTTP response (not read to the end).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeAlias, TypeVar

from agent_app.cancellation import Cancellation, StopRequested

T = TypeVar("T")

TextSink: TypeAlias = Callable[[str], None]
"""Receives each text delta of the answer as it arrives."""
PacedTextSink: TypeAlias = Callable[[str], Awaitable[None] | None]
"""A sink that may ask the stream to wait: an awaitable it returns is awaited before the provider's stream is
read further (a slow reader's backpressure, up to the provider's socket); ``None`` goes on at once."""

StreamStart: TypeAlias = Callable[[TextSink], Coroutine[Any, Any, T]]
"""Starts the streamed request, given where its text deltas go."""


class _ThreadLoop:
    """One thread's event loop, closed when the thread ends (this holder goes with the thread's locals), so
    SDKs that cache a client per loop can tell the entry is dead (google-genai drops closed loops')."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        if not self.loop.is_running():
            self.loop.close()


_local = threading.local()
_SETTLE_ROUNDS = 10
"""Rounds of :func:`settle_thread_loop`, two loop iterations each: the four nested stream readers an OpenAI
answer leaves open close in eight."""


def _thread_loop() -> asyncio.AbstractEventLoop:
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _local.holder = _ThreadLoop()
    return holder.loop


def settle_thread_loop() -> None:
    """Let this thread's loop finish what its requests left queued: an SDK's async generator dropped unfinished
    (OpenAI's stream readers, a cancelled stream) closes in a task of its own, which would otherwise wait for
    the thread's next request, or be reported destroyed at exit. For a thread going idle (a run's worker
    between runs), never mid-request."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is not None and not holder.loop.is_closed():
        for _ in range(_SETTLE_ROUNDS):
            holder.loop.run_until_complete(asyncio.sleep(0))


def close_thread_loop() -> None:
    """Close this thread's loop cleanly (a thread done with model requests): what its requests left queued
    finishes, then its async generators and its default executor's threads."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed() or holder.loop.is_running():
        return
    settle_thread_loop()
    holder.loop.run_until_complete(holder.loop.shutdown_asyncgens())
    holder.loop.run_until_complete(holder.loop.shutdown_default_executor())
    holder.loop.close()


@atexit.register
def _close_at_exit() -> None:
    """The main thread's loop (tests, benches, scripts) is closed cleanly before the interpreter goes: a task
    still pending on it would be reported destroyed while logging is already gone."""
    close_thread_loop()


class _Reader:
    """The sink a request writes its deltas to: keeps the text so far and hands each delta to ``on_text``; a
    failing ``on_text`` is kept (never raised into the SDK's code) and cancels the request."""

    def __init__(self, on_text: TextSink | None) -> None:
        self.on_text = on_text
        self.received: list[str] = []
        self.failure: BaseException | None = None
        self.task: asyncio.Task[Any] | None = None

    def __call__(self, delta: str) -> None:
        if self.failure is not None:
            return
        self.received.append(delta)
        if self.on_text is not None:
            try:
                self.on_text(delta)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's frame by run_streaming
                self.failure = exc
                if self.task is not None:
                    self.task.cancel()


def run_streaming(
    start: StreamStart[T], *, on_text: TextSink | None = None, cancellation: Cancellation | None = None
) -> T:
    """Run ``start`` on this thread's loop and return its answer, calling ``on_text`` with each delta as it
    arrives. When ``cancellation`` is set the request is cancelled at once (its response closed) and
    :class:`~agent_app.cancellation.StopRequested` raised with the text received so far; an exception of
    ``on_text`` also cancels the request, then propagates. Not for a thread already running an event loop
    (await the coroutine there)."""
    if asyncio._get_running_loop() is not None:
        raise RuntimeError("run_streaming blocks its thread: on an event loop, await the coroutine instead")
    if cancellation is not None:
        cancellation.check()
    loop = _thread_loop()
    reader = _Reader(on_text)
    task = loop.create_task(start(reader))
    reader.task = task
    forget = cancellation.cancel_on_set(task) if cancellation is not None else None
    try:
        return loop.run_until_complete(task)
    except BaseException as exc:
        if reader.failure is not None:  # whatever the request became after on_text failed
            raise reader.failure from None
        if isinstance(exc, asyncio.CancelledError) and cancellation is not None and cancellation.is_set():
            raise StopRequested("".join(reader.received)) from None
        raise
    finally:
        if forget is not None:
            forget()
        if not task.done():  # the wait itself was interrupted (KeyboardInterrupt): end the request too
            task.cancel()
            loop.run_until_complete(asyncio.wait([task]))
