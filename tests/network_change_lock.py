"""Browser tests and tests that change this machine's network do not overlap, across the suite's processes.

When a network interface comes or goes (the remote tests' veth pair), Chromium fails every request it has in
flight with ``net::ERR_NETWORK_CHANGED``: a two-worker run lost a page's scripts that way, and the page never
drew. One lock file, held shared by each test that uses the ``browser`` fixture and alone by
:func:`network_changes`, lets any number of browser tests run together and none while the network changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCK_PATH = Path(tempfile.gettempdir()) / "agent-session-shell-tests.network.lock"
CHANGES_NETWORK = "changes_network"
"""The marker of a test that changes the network: it takes the lock alone, so it takes no shared lock."""
SETTLE_SECONDS = 1.0
"""Held this much longer after the last change: Chromium hears of it from the kernel a moment later."""


@contextlib.contextmanager
def _locked(mode: int) -> Iterator[None]:
    with LOCK_PATH.open("a") as handle:
        fcntl.flock(handle, mode)  # released when the file closes, also if the process dies
        yield


@contextlib.contextmanager
def network_changes() -> Iterator[None]:
    """Around adding and deleting an interface: waits until no browser test runs, and holds them off."""
    with _locked(fcntl.LOCK_EX):
        try:
            yield
        finally:
            time.sleep(SETTLE_SECONDS)


@pytest.fixture(autouse=True)
def _steady_network_for_browsers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test with a browser runs while the network stays as it is."""
    if "browser" not in request.fixturenames or request.node.get_closest_marker(CHANGES_NETWORK):
        yield
        return
    with _locked(fcntl.LOCK_SH):
        yield
