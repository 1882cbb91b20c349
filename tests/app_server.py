"""``streamlit run app.py`` as a subprocess on a free loopback port, and a headless Chromium to drive it.

Used by the browser and restart tests. The server is stopped by its own pid (never by name); the
browser is Debian's ``chromium`` driven by Playwright (no browser download).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STARTUP_TIMEOUT_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class AppServer:
    """One ``streamlit run app.py`` process."""

    def __init__(self, port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.port = port
        self.process = process
        self.log_path = log_path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """SIGTERM to this server's pid, then SIGKILL if it does not exit within 10 s."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start_app(env: Mapping[str, str], log_path: Path, port: int | None = None) -> AppServer:
    """Start the app with ``env`` added to this process's environment; wait until it is healthy."""
    port = port or free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    server = AppServer(port, process, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.url}_stcore/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(f"streamlit did not become healthy in {STARTUP_TIMEOUT_SECONDS:.0f} s:\n{server.log()}")


@contextmanager
def running_app(env: Mapping[str, str], log_path: Path) -> Iterator[AppServer]:
    server = start_app(env, log_path)
    try:
        yield server
    finally:
        server.stop()
