"""Threads' way to the async SDKs (a loop per thread): deltas reach the caller in order, in its own thread,
before the answer; a cancellation or a failing reader ends the request at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_app.cancellation import Cancellation, StopRequested
from agent_app.providers.provider_loop import TextSink, run_streaming


async def _three_pieces(sink: TextSink) -> str:
    for piece in ("a", "b", "c"):
        sink(piece)
        await asyncio.sleep(0.01)
    return "abc!"


def test_deltas_arrive_in_order_in_the_callers_thread_before_the_answer() -> None:
    seen: list[tuple[str, str]] = []
    answer = run_streaming(_three_pieces, on_text=lambda d: seen.append((d, threading.current_thread().name)))
    assert answer == "abc!"
    assert seen == [(piece, threading.current_thread().name) for piece in "abc"]


def test_each_thread_keeps_one_loop_for_its_requests_closed_when_the_thread_ends() -> None:
    async def loop_of_request(sink: TextSink) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    mine = run_streaming(loop_of_request)
    assert run_streaming(loop_of_request) is mine and not mine.is_closed()
    theirs: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=lambda: theirs.extend(run_streaming(loop_of_request) for _ in range(2)))
    worker.start()
    worker.join()
    assert theirs[0] is theirs[1] and theirs[0] is not mine
    assert theirs[0].is_closed()  # gone with its thread: SDK caches keyed by loop drop it
    assert not mine.is_closed()


def test_a_thread_running_an_event_loop_is_told_to_await_instead() -> None:
    async def inside() -> None:
        with pytest.raises(RuntimeError, match="await the coroutine"):
            run_streaming(_three_pieces)

    asyncio.run(inside())
    assert run_streaming(_three_pieces) == "abc!"  # the thread's own loop is untouched


def test_a_failure_of_the_request_reaches_the_caller_after_its_deltas() -> None:
    async def fail(sink: TextSink) -> str:
        sink("partial")
        raise ValueError("provider broke")

    seen: list[str] = []
    with pytest.raises(ValueError, match="provider broke"):
        run_streaming(fail, on_text=seen.append)
    assert seen == ["partial"]


def test_cancel_ends_a_waiting_request_at_once_with_the_text_so_far() -> None:
    closed = threading.Event()

    async def slow(sink: TextSink) -> str:
        sink("so far")
        try:
            await asyncio.sleep(30)
        finally:
            closed.set()  # where an SDK closes its HTTP response
        return "never"

    cancel = Cancellation()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(StopRequested) as caught:
        run_streaming(slow, on_text=lambda d: None, cancellation=cancel)
    assert time.monotonic() - started < 1.0
    assert caught.value.partial_text == "so far"
    assert closed.is_set()  # the request was finished before the call returned


def test_a_reader_that_raises_cancels_the_request() -> None:
    closed = threading.Event()

    async def endless(sink: TextSink) -> str:
        try:
            while True:
                sink("x")
                await asyncio.sleep(0.01)
        finally:
            closed.set()

    def reader(delta: str) -> None:
        raise RuntimeError("reader failed")

    with pytest.raises(RuntimeError, match="reader failed"):
        run_streaming(endless, on_text=reader)
    assert closed.is_set()


def test_a_request_stopped_before_it_starts_is_never_sent() -> None:
    started: list[str] = []

    async def request(sink: TextSink) -> str:
        started.append("sent")
        return "answer"

    cancel = Cancellation()
    cancel.set()
    with pytest.raises(StopRequested) as caught:
        run_streaming(request, cancellation=cancel)
    assert caught.value.partial_text == "" and started == []


def test_the_failure_of_the_reader_wins_over_what_the_request_became() -> None:
    async def fails_after(sink: TextSink) -> str:
        sink("x")
        raise ValueError("provider broke as it was cancelled")

    def reader(delta: str) -> None:
        raise RuntimeError("reader failed")

    with pytest.raises(RuntimeError, match="reader failed"):
        run_streaming(fails_after, on_text=reader)
