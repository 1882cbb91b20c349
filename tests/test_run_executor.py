"""The runs' bounded executor: at most ``max_workers`` jobs at once, the rest in FIFO order; a worker stays
after its job, so the next job reuses its thread and event loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_app.providers.provider_loop import TextSink, run_streaming
from agent_app.runs.executor import BoundedExecutor
from tests.run_support import wait_until

WAIT = 10.0


async def _loop_of_request(sink: TextSink) -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


class Recorder:
    """A job that records the thread it ran on and the loop its model request ran on."""

    def __init__(self) -> None:
        self.runs: list[tuple[threading.Thread, asyncio.AbstractEventLoop]] = []

    def __call__(self) -> None:
        self.runs.append((threading.current_thread(), run_streaming(_loop_of_request)))

    def run_once(self, executor: BoundedExecutor) -> tuple[threading.Thread, asyncio.AbstractEventLoop]:
        count = len(self.runs)
        executor.submit(self)
        wait_until(lambda: len(self.runs) > count, WAIT, "the job never ran")
        return self.runs[-1]


def test_a_job_after_a_job_runs_on_the_same_worker_and_event_loop() -> None:
    executor = BoundedExecutor(4)
    recorder = Recorder()
    first_thread, first_loop = recorder.run_once(executor)
    wait_until(lambda: executor.idle == 1, WAIT, "the worker never went idle")
    second_thread, second_loop = recorder.run_once(executor)
    assert second_thread is first_thread and second_loop is first_loop and not first_loop.is_closed()
    assert first_thread.daemon and executor.workers == 1


def test_idle_workers_are_kept_and_reused_never_more_than_the_bound() -> None:
    executor = BoundedExecutor(2)
    release = threading.Event()
    threads: list[threading.Thread] = []

    def blocking() -> None:
        threads.append(threading.current_thread())
        release.wait(WAIT)

    executor.submit(blocking)
    executor.submit(blocking)
    wait_until(lambda: len(threads) == 2, WAIT, "the two jobs never started")
    release.set()
    recorder = Recorder()
    for _ in range(4):
        thread, _loop = recorder.run_once(executor)
        assert thread in threads and thread.is_alive()
    assert executor.workers == 2 and {thread for thread, _ in recorder.runs} <= set(threads)


def test_jobs_past_the_bound_wait_until_a_worker_is_free() -> None:
    executor = BoundedExecutor(2)
    release = threading.Event()
    started: list[int] = []
    running = 0
    most = 0
    guard = threading.Lock()

    def job(index: int) -> None:
        nonlocal running, most
        with guard:
            started.append(index)
            running += 1
            most = max(most, running)
        release.wait(WAIT)
        with guard:
            running -= 1

    for index in range(6):
        executor.submit(lambda index=index: job(index))  # type: ignore[misc]
    wait_until(lambda: len(started) == 2, WAIT, "the first two jobs never started")
    time.sleep(0.1)
    assert sorted(started) == [0, 1] and executor.waiting == 4
    release.set()
    wait_until(lambda: len(started) == 6 and running == 0, WAIT, "the waiting jobs never ran")
    assert sorted(started) == list(range(6)) and most == 2 and executor.workers == 2


def test_one_worker_runs_waiting_jobs_in_the_order_they_came() -> None:
    executor = BoundedExecutor(1)
    release = threading.Event()
    order: list[int] = []

    def first() -> None:
        release.wait(WAIT)

    executor.submit(first)
    for index in range(5):
        executor.submit(lambda index=index: order.append(index))  # type: ignore[misc]
    release.set()
    wait_until(lambda: len(order) == 5, WAIT, "the waiting jobs never ran")
    assert order == [0, 1, 2, 3, 4]


def test_a_job_that_raises_leaves_its_worker_serving_the_next_job() -> None:
    executor = BoundedExecutor(1)
    recorder = Recorder()
    thread, _ = recorder.run_once(executor)

    def broken() -> None:
        raise RuntimeError("job failed")

    executor.submit(broken)
    assert recorder.run_once(executor)[0] is thread


def test_closing_lets_queued_jobs_finish_then_ends_every_worker_and_closes_its_loop() -> None:
    executor = BoundedExecutor(2)
    recorder = Recorder()
    release = threading.Event()

    def blocking() -> None:
        release.wait(WAIT)

    executor.submit(blocking)
    idle_thread, idle_loop = recorder.run_once(executor)
    executor.submit(recorder)  # queued behind the blocking job or taken by the idle worker
    executor.close()
    release.set()
    wait_until(lambda: executor.workers == 0, WAIT, "the workers never ended")
    assert len(recorder.runs) == 2 and all(loop.is_closed() for _, loop in recorder.runs)
    idle_thread.join(WAIT)
    assert not idle_thread.is_alive() and idle_loop.is_closed()
    with pytest.raises(RuntimeError, match="closed"):
        executor.submit(recorder)
