"""Letting an assistant run finish when the user clicks something in the middle of it.

A click asks Streamlit to rerun the script; Streamlit does so by raising ``RerunException`` at the
running script's next *yield point* — any Streamlit call, and also any read or write of
``st.session_state``. In the middle of a run that could fall between "the model answered" and "the
answer is stored", and the answer would be lost. During a run, every Streamlit call and every
session-state access goes through a :class:`RerunDeferral`, which keeps the request and lets the run
go on; afterwards :meth:`RerunDeferral.release` raises it, so the page reruns with the click applied
(its widget values travel inside the exception).

This relies on ``runner.fastReruns = false`` (``.streamlit/config.toml``): with fast reruns Streamlit
would start a second script thread beside the running one instead of asking it to rerun.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeVar

from streamlit.runtime.scriptrunner import RerunException

from agent_app.stores import SessionState

T = TypeVar("T")
MAX_HELD_REQUESTS = 100
"""Each retry consumes one request; only a user clicking this often could exhaust it."""


class RerunDeferral:
    """The latest rerun request met during a run, raised again by :meth:`release` after it.

    Only reruns are held: a stop request (the session is closing) still ends the run at once.
    """

    def __init__(self) -> None:
        self.pending: RerunException | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Run a block of Streamlit calls; a rerun request cuts the block short and is kept."""
        try:
            yield
        except RerunException as request:
            self.pending = request

    def retry(self, operation: Callable[[], T]) -> T:
        """``operation()``, repeated if it met a rerun request (which is kept).

        Safe for session-state access: Streamlit checks for requests *before* it reads or writes.
        """
        for _ in range(MAX_HELD_REQUESTS):
            try:
                return operation()
            except RerunException as request:
                self.pending = request
        return operation()

    def release(self) -> None:
        """Raise the kept request, if any: Streamlit then reruns the page."""
        if self.pending is not None:
            request, self.pending = self.pending, None
            raise request


class DeferringState(MutableMapping[str, Any]):
    """``st.session_state`` as seen by a run: each access that meets a rerun request is retried."""

    def __init__(self, state: SessionState, deferral: RerunDeferral) -> None:
        self._state = state
        self._deferral = deferral

    def __getitem__(self, key: str) -> Any:
        return self._deferral.retry(lambda: self._state[key])

    def __setitem__(self, key: str, value: Any) -> None:
        self._deferral.retry(lambda: self._state.__setitem__(key, value))

    def __delitem__(self, key: str) -> None:
        self._deferral.retry(lambda: self._state.__delitem__(key))

    def __contains__(self, key: object) -> bool:
        return self._deferral.retry(lambda: key in self._state)

    def __iter__(self) -> Iterator[str]:
        return iter(self._deferral.retry(lambda: [str(key) for key in self._state]))

    def __len__(self) -> int:
        return self._deferral.retry(lambda: len(self._state))
