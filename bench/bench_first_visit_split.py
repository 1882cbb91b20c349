"""Where a first visit's server CPU goes: serving the static files the browser asks for, or the rest (the
websocket session and the script's run). Against Streamlit's hello world in the same run, as
``bench_page_load`` compares them.

For each page (``bench/hello_page.py`` and ours at the small case of ``bench_page_load``), Chromium opens it
in a new browser context (nothing cached) and the bench records every static file it fetched; the same files
are then fetched again over plain HTTP on one connection, with the browser's request headers, and the
server's CPU for them is the static share. Printed: each share, and the floor of the first-visit ratio: ours
with its own static files but hello world's session and run, which no change to our script can go below
while the page draws the kinds of element it draws.

Run: ``.venv/bin/python -m bench.bench_first_visit_split`` (about a minute; needs Debian's chromium).
"""

from __future__ import annotations

import argparse
import statistics

import httpx
from playwright.sync_api import Browser, Request

from bench.bench_page_load import (
    LOAD_TARGET,
    TIMEOUT_MS,
    USABLE_INPUT,
    VIEWPORT,
    chromium,
    page_load,
    seeded_world,
    settled_cpu,
    verdict,
)
from tests.browser_support import IDLE
from testsupport.streamlit_server import StreamlitServer, run_streamlit

STATIC_PREFIX = "/static/"


def static_requests(browser: Browser, server: StreamlitServer, query: str) -> list[tuple[str, dict[str, str]]]:
    """The static files (address and request headers) a first visit to ``query`` fetches."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    fetched: list[tuple[str, dict[str, str]]] = []

    def note(request: Request) -> None:
        if request.url.startswith(server.base_url + STATIC_PREFIX):
            fetched.append((request.url, request.headers))

    try:
        page = context.new_page()
        page.on("request", note)
        page.goto(f"{server.base_url}/{query}", wait_until="commit")
        page.wait_for_selector(USABLE_INPUT, timeout=TIMEOUT_MS)
        page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    finally:
        context.close()
    return fetched


def static_cpu(server: StreamlitServer, fetched: list[tuple[str, dict[str, str]]]) -> tuple[float, int]:
    """Server CPU and bytes on the wire for fetching ``fetched`` once, one after another on one kept-alive
    connection (as the browser reuses its connections)."""
    before = settled_cpu(server)
    size = 0
    with httpx.Client(timeout=60) as client:
        for url, headers in fetched:
            sent = {name: value for name, value in headers.items() if not name.startswith(":")}
            with client.stream("GET", url, headers=sent) as response:
                size += sum(len(chunk) for chunk in response.raise_for_status().iter_raw())  # as sent, undecoded
    return settled_cpu(server) - before, size


def run(browser: Browser, hello: StreamlitServer, ours: StreamlitServer, query: str, loads: int) -> None:
    page_load(browser, hello, "")  # warm both servers' imports and caches before measuring anything
    page_load(browser, ours, query)
    pages = {"hello": (hello, ""), "ours": (ours, query)}
    fetched = {name: static_requests(browser, server, address) for name, (server, address) in pages.items()}
    totals: dict[str, list[float]] = {name: [] for name in pages}
    statics: dict[str, list[float]] = {name: [] for name in pages}
    sizes: dict[str, int] = {}
    for _ in range(loads):
        for name, (server, address) in pages.items():
            totals[name].append(page_load(browser, server, address).cpu)
            cpu, sizes[name] = static_cpu(server, fetched[name])
            statics[name].append(cpu)
    mean = {name: statistics.mean(values) for name, values in totals.items()}
    static = {name: statistics.mean(values) for name, values in statics.items()}
    print(f"first visit (a new browser context), Chromium at 1440x900, {loads} loads each; CPU: the mean")
    for name in pages:
        share = static[name] / mean[name]
        print(f"{name:<6} server CPU per load {mean[name]:.4f} s; its {len(fetched[name])} static files "
              f"({sizes[name] / 1e6:.2f} MB) {static[name]:.4f} s ({share:.0%}); the rest "
              f"{mean[name] - static[name]:.4f} s")  # fmt: skip
    verdict("server CPU per page load vs hello world", mean["ours"], mean["hello"], LOAD_TARGET, "s")
    floor = static["ours"] + (mean["hello"] - static["hello"])
    verdict("floor: our static files, hello's session+run", floor, mean["hello"], LOAD_TARGET, "s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loads", type=int, default=5, help="first visits per page")
    loads = parser.parse_args().loads
    with (
        seeded_world() as (work, queries, env, playwright),
        run_streamlit(env, work, "bench/hello_page.py") as hello,
        run_streamlit(env, work) as ours,
        chromium(playwright) as browser,
    ):
        run(browser, hello, ours, queries["small"], loads)


if __name__ == "__main__":
    main()
