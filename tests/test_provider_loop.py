"""The provider loop (threads' way to the async SDKs): deltas reach the caller in order and in its own thread,
before the answer; a cancel signal or a failing reader ends the request at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_app.providers.provider_loop import (
    RequestCancelledError,
    TextSink,
    provider_loop,
    run_streaming,
)


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


def test_the_loop_is_one_daemon_thread_shared_by_every_caller() -> None:
    loop = provider_loop()
    assert provider_loop() is loop and loop.is_running()
    assert [t.daemon for t in threading.enumerate() if t.name == "provider-loop"] == [True]


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

    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(RequestCancelledError) as caught:
        run_streaming(slow, on_text=lambda d: None, cancel=cancel)
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
