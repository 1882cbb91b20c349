"""A transcription engine's work, run so that Stop is answered within a fraction of a second.

Engines work chunk by chunk inside calls nothing can interrupt (a native model call, an HTTP upload):
checking for Stop between chunks alone would answer it only once the chunk in hand is done, seconds
later. So the work runs in a worker thread while the caller's thread waits in short steps, passes the
worker's progress on (in the caller's thread, where a page's progress bar or a run's recorder lives) and
raises :class:`~agent_app.types.StopRequested` as soon as ``should_stop()`` says so. The worker is told
too and ends at its next chunk boundary, so at most the chunk in hand is finished in the background.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from agent_app.types import StopRequested

T = TypeVar("T")

POLL_SECONDS = 0.05
"""How often the waiting thread looks at ``should_stop`` and the worker's progress."""


def run_stoppable(
    work: Callable[[Callable[[float], None]], T],
    on_progress: Callable[[float], None],
    should_stop: Callable[[], bool],
) -> T:
    """``work(progress)``'s result, computed in a worker thread; :class:`StopRequested` within
    :data:`POLL_SECONDS` of ``should_stop()`` turning true. Whatever ends the wait (Stop, ``on_progress``
    raising), the worker's next ``progress`` call raises ``StopRequested`` so it stops there."""
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

    threading.Thread(target=run, name="transcription-worker", daemon=True).start()
    try:
        while True:
            done = outcome.done() or _wait(outcome)
            while not reports.empty():
                on_progress(reports.get())
            if done:
                return outcome.result()
            if should_stop():
                raise StopRequested
    finally:
        abandoned.set()


def _wait(outcome: Future[T]) -> bool:
    """Whether ``outcome`` finished within one poll interval."""
    try:
        outcome.exception(timeout=POLL_SECONDS)
    except TimeoutError:
        return False
    return True
