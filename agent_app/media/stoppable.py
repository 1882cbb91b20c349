"""A transcription engine's work, run so that Stop is answered at once, not at the end of a chunk.

Engines work chunk by chunk inside calls nothing can interrupt (a native model call, an HTTP upload):
checking for Stop between chunks alone would answer it only once the chunk in hand is done, seconds
later. So the work runs in a worker thread while the caller's thread waits for what comes first: the
worker's progress (passed on in the caller's thread, where a page's progress bar or a run's recorder
lives), its end, or the run's :class:`~agent_app.cancellation.Cancellation` being set, which raises
:class:`~agent_app.cancellation.StopRequested`. The worker is told too and ends at its next chunk
boundary, so at most the chunk in hand is finished in the background.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from agent_app.cancellation import Cancellation, StopRequested

T = TypeVar("T")

_FINISHED = -1.0
"""Put on the queue when the work ended (its outcome is in the future)."""
_STOPPED = -2.0
"""Put on the queue when the cancellation was set."""


def run_stoppable(
    work: Callable[[Callable[[float], None]], T], on_progress: Callable[[float], None], cancellation: Cancellation
) -> T:
    """``work(progress)``'s result, computed in a worker thread; :class:`StopRequested` as soon as
    ``cancellation`` is set. Whatever ends the wait (Stop, ``on_progress`` raising), the worker's next
    ``progress`` call raises ``StopRequested`` so it stops there."""
    cancellation.check()
    abandoned = threading.Event()
    reports: queue.SimpleQueue[float] = queue.SimpleQueue()
    outcome: Future[T] = Future()

    def progress(fraction: float) -> None:
        if abandoned.is_set():
            raise StopRequested
        reports.put(fraction)

    def run() -> None:
        try:
            outcome.set_result(work(progress))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which raises it
            outcome.set_exception(exc)
        finally:
            reports.put(_FINISHED)

    forget = cancellation.on_set(lambda: reports.put(_STOPPED))
    threading.Thread(target=run, name="transcription-worker", daemon=True).start()
    try:
        while True:
            report = reports.get()
            if report == _FINISHED:
                return outcome.result()
            if report == _STOPPED:
                raise StopRequested
            on_progress(report)
    finally:
        forget()
        abandoned.set()
