"""``POST /api/agent/chat`` on a real non-loopback address: the test makes its own network namespace joined
to this one by a veth pair, runs ``streamlit run app.py`` (and the fake model) inside it bound to the
namespace side's address, and calls it from this side. Without a token configured a remote caller gets 403
whatever it sends; with one, no or a wrong token gets 401 and the right one 200.

Addresses are in 10.231.0.0/16, assigned only to this test's own veth pair; the namespace and the pair are
deleted by name in a ``finally``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.hostile_support import IS_ROOT
from tests.network_change_lock import SETTLE_SECONDS, network_changes
from testsupport.streamlit_server import ROOT, STARTUP_TIMEOUT, stop

pytestmark = [
    pytest.mark.slow,
    pytest.mark.changes_network,
    pytest.mark.skipif(not IS_ROOT, reason="makes a network namespace and a veth pair: needs root (CI runs as root)"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2's ip (scripts/test.sh installs it)"),
]

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
TOKEN = "remote-route-token-7f3a"
PORT = 8765


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def network_namespace() -> Iterator[tuple[str, str, str]]:
    """A namespace with a veth pair to this one: ``(name, host-side address, namespace-side address)``."""
    tag = os.getpid() % 60000
    name, host_link, ns_link = f"hostile{tag}", f"hva{tag}", f"hvb{tag}"
    subnet = f"10.231.{tag % 250}"
    host_address, ns_address = f"{subnet}.1", f"{subnet}.2"
    with network_changes():  # no browser test runs meanwhile (Chromium drops requests on a network change)
        try:
            _ip("netns", "add", name)
            _ip("link", "add", host_link, "type", "veth", "peer", "name", ns_link)
            _ip("link", "set", ns_link, "netns", name)
            _ip("addr", "add", f"{host_address}/30", "dev", host_link)
            _ip("link", "set", host_link, "up")
            _ip("-n", name, "addr", "add", f"{ns_address}/30", "dev", ns_link)
            _ip("-n", name, "link", "set", ns_link, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            time.sleep(SETTLE_SECONDS)  # the test's own browser, if any, hears of the new link before it uses it
            yield name, host_address, ns_address
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", host_link)  # deleting one end deletes the pair
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", name)


def _in_namespace(namespace: str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``args`` run inside ``namespace`` (``ip netns exec`` execs it: the process keeps the PID we get)."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            ["ip", "netns", "exec", namespace, *args],
            cwd=ROOT,
            env={**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **env},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


@contextlib.contextmanager
def app_in_namespace(  # noqa: PLR0913 - where it listens, how it is reached, and its settings
    namespace: str,
    address: str,
    tmp_path: Path,
    token: str,
    *,
    bind: str | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[str]:
    """The fake model on the namespace's loopback and ``streamlit run app.py`` on ``bind`` (default
    ``address``) with ``settings`` added, reached at ``address``; the route's URL."""
    tag = f"{bool(token)}-{len(list(tmp_path.glob('app-*.log')))}"
    model_log = tmp_path / f"model-{tag}.log"
    model = _in_namespace(
        namespace,
        [sys.executable, "-c", "import time\nfrom fake_llm import FakeLLMServer\n"
         "s = FakeLLMServer().start()\nprint(s.openai_base_url, flush=True)\ntime.sleep(3600)"],
        {},
        model_log,
    )  # fmt: skip
    app_log = tmp_path / f"app-{tag}.log"
    app: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not model_log.read_text().strip():
            assert model.poll() is None and time.monotonic() < deadline, model_log.read_text()
            time.sleep(0.05)
        env = {
            "AGENT_DATA_DIR": str(tmp_path / "data"),
            "LLM_PROVIDER": "openai-compatible",
            "LLM_BASE_URL": model_log.read_text().strip(),
            "LLM_MODEL": "fake-model",
            "LLM_API_KEY": "key-in-the-namespace",
            "LLM_MAX_RETRIES": "0",
            "AGENT_API_TOKEN": token,
            **(settings or {}),
        }
        command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(PORT),
                   "--server.address", bind or address, "--server.headless", "true"]  # fmt: skip
        app = _in_namespace(namespace, command, env, app_log)
        base = f"http://{address}:{PORT}"
        while True:
            assert app.poll() is None, app_log.read_text()[-3000:]
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/_stcore/health", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, app_log.read_text()[-3000:]
            time.sleep(0.1)
        yield f"{base}/api/agent/chat"
    finally:
        if app is not None:
            stop(app)
        stop(model)


def test_the_route_on_a_real_remote_address_needs_the_token(tmp_path: Path) -> None:
    cases = 0
    with network_namespace() as (namespace, host_address, ns_address), httpx.Client(timeout=30) as http:
        with app_in_namespace(namespace, ns_address, tmp_path, token="") as url:
            for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}, {"Authorization": "Bearer anything"}):
                answer = http.post(url, json=HELLO, headers=headers)
                assert answer.status_code == 403, (headers, answer.text)
                assert "fake reply" not in answer.text
                cases += 1
        with app_in_namespace(namespace, ns_address, tmp_path, token=TOKEN) as url:
            for headers, status in (
                ({}, 401),
                ({"Authorization": "Bearer wrong-token"}, 401),
                ({"Authorization": f"Bearer {TOKEN}x"}, 401),
                ({"Authorization": f"Basic {TOKEN}"}, 401),
                ({"Authorization": f"Bearer {TOKEN}"}, 200),
            ):
                answer = http.post(url, json=HELLO, headers=headers)
                assert answer.status_code == status, (headers, answer.text)
                assert TOKEN not in answer.text
                cases += 1
            assert answer.json()["content"] == "fake reply"
        assert host_address != ns_address
    assert cases == 8
