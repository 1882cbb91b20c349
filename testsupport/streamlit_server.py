"""Run ``streamlit run app.py`` as a real server for a test or a bench: free loopback port, output captured to a
file, stopped by its pid. Shared by the route's HTTP tests, the browser tests and ``bench_streaming``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StreamlitServer:
    """A running server: its base URL and the file its stdout/stderr go to."""

    base_url: str
    output_path: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")


@contextmanager
def run_streamlit(
    env: Mapping[str, str], log_dir: Path, script: str = "app.py", port: int | None = None
) -> Iterator[StreamlitServer]:
    """Start ``streamlit run <script>`` headless on ``port`` (a free loopback port unless given: a sign-in's
    redirect URI names it before the server starts) with ``env`` added to the environment; yield once
    ``/_stcore/health`` answers; terminate (then kill) the process on exit. A failure inside the block prints
    the end of the server's log, for the failed test's report."""
    port = port or free_port()
    output_path = log_dir / f"streamlit-{port}.log"
    full_env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **env}
    command = [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
    ]  # fmt: skip
    with output_path.open("wb") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=full_env, stdout=sink, stderr=subprocess.STDOUT)
    server = StreamlitServer(f"http://127.0.0.1:{port}", output_path, process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {process.returncode}:\n{server.output()[-3000:]}")
            try:
                if httpx.get(f"{server.base_url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start in {STARTUP_TIMEOUT} s:\n{server.output()[-3000:]}")
            time.sleep(0.1)
        try:
            yield server
        except BaseException:
            # pytest shows a failed test's captured output: the server's own words on what went wrong.
            print(f"--- the last of {output_path.name} ---\n{server.output()[-6000:]}")
            raise
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server this run started (by its pid), then kill it if it does not exit in time."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
