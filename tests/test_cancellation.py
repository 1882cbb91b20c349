"""The one Stop object: set once from any thread, its callbacks run then (or at once when registered late),
a removed callback never runs, and ``check`` raises the one "stopped" exception."""

from __future__ import annotations

import threading

import pytest

from agent_app.cancellation import Cancellation, StopRequested


def test_callbacks_run_once_when_set_from_another_thread() -> None:
    cancellation = Cancellation()
    calls: list[str] = []
    cancellation.on_set(lambda: calls.append(threading.current_thread().name))
    forget = cancellation.on_set(lambda: calls.append("removed"))
    forget()
    setter = threading.Thread(target=cancellation.set, name="setter")
    setter.start()
    setter.join()
    cancellation.set()  # a second Stop changes nothing
    assert calls == ["setter"] and cancellation.is_set() and cancellation.wait(0)


def test_a_callback_registered_after_it_was_set_runs_at_once() -> None:
    cancellation = Cancellation()
    cancellation.set()
    calls: list[int] = []
    cancellation.on_set(lambda: calls.append(1))()  # its remover is harmless
    assert calls == [1]


def test_check_raises_the_stop_with_no_text_and_not_as_an_ordinary_exception() -> None:
    cancellation = Cancellation()
    cancellation.check()
    cancellation.set()
    with pytest.raises(StopRequested) as caught:
        cancellation.check()
    assert caught.value.partial_text == "" and not isinstance(caught.value, Exception)
