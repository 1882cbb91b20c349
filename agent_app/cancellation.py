"""Stop, as one object: a run's :class:`Cancellation`, set from any thread, seen by everything the run does.

The run manager makes one per run and sets it when Stop is pressed (here, or read from storage for a Stop
written elsewhere; a job queue's abort sets the same object). It travels down with the work: the orchestrator
looks at it between steps, the model request registers a callback that cancels its asyncio task the moment
it is set (no polling), and a running tool waits on it. Whatever was stopped raises :class:`StopRequested`,
carrying the answer text streamed so far, up to the run's end.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


class StopRequested(BaseException):
    """The user pressed Stop: raised by whatever was stopped (a model request, a running tool's
    ``report_progress``), with the answer's text that had streamed in by then. A ``BaseException``, like
    ``asyncio.CancelledError``, so a tool's ``except Exception`` cannot turn it into an ordinary failure."""

    def __init__(self, partial_text: str = "") -> None:
        super().__init__("stopped by the user")
        self.partial_text = partial_text


class Cancellation:
    """Set once, from any thread; callbacks registered with :meth:`on_set` run when it is (at once, in the
    registering thread, when it already was)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it was set within ``timeout`` seconds."""
        return self._event.wait(timeout)

    def check(self) -> None:
        """Raise :class:`StopRequested` once set: for loops between steps of their work."""
        if self._event.is_set():
            raise StopRequested

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when this is set; returns what removes it again (for work that ended first)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return _nothing

    def cancel_on_set(self, task: asyncio.Task[Any]) -> Callable[[], None]:
        """Cancel ``task`` on its own loop when this is set (from whichever thread sets it)."""
        loop = task.get_loop()

        def cancel() -> None:
            loop.call_soon_threadsafe(task.cancel)

        return self.on_set(cancel)

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


def _nothing() -> None:
    """The remover of a callback that already ran."""
