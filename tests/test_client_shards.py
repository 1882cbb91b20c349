"""Several SDK clients per event loop (:mod:`agent_app.providers.client_shards`): which client a request gets,
and, with the real ``openai`` and ``google-genai`` SDKs against the fake server, that bursts and single requests
reuse connections."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from itertools import count

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.providers.client_shards import MAX_CLIENTS, REQUESTS_PER_CLIENT, ClientShards
from agent_app.providers.gemini import GeminiAdapter
from agent_app.providers.openai_compatible import OpenAICompatibleAdapter
from agent_app.settings import load_settings
from agent_app.types import ChatMessage
from fake_llm import FakeLLMServer, delayed, gemini_text, openai_text, streamed


def _numbered() -> ClientShards[int]:
    made = count()
    return ClientShards(lambda: next(made))


def test_one_request_at_a_time_always_gets_the_first_client() -> None:
    shards = _numbered()
    for _ in range(3 * REQUESTS_PER_CLIENT):
        with shards.lease() as client:
            assert client == 0 and shards.in_flight == (1,)
    assert shards.clients == (0,) and shards.in_flight == (0,)


def test_a_burst_fills_each_client_in_turn_and_a_freed_place_is_taken_first() -> None:
    shards = _numbered()
    leases = [shards.lease() for _ in range(2 * REQUESTS_PER_CLIENT + 1)]
    got = [lease.__enter__() for lease in leases]
    assert got == [0] * REQUESTS_PER_CLIENT + [1] * REQUESTS_PER_CLIENT + [2]
    assert shards.in_flight == (REQUESTS_PER_CLIENT, REQUESTS_PER_CLIENT, 1)
    leases.pop(3).__exit__(None, None, None)  # one of the first client's requests is over
    with shards.lease() as client:
        assert client == 0
    for lease in leases:
        lease.__exit__(None, None, None)
    assert shards.in_flight == (0, 0, 0) and shards.clients == (0, 1, 2)
    with shards.lease() as client:
        assert client == 0  # after the burst, the first client again (its connections are warm)


def test_a_request_that_fails_is_no_longer_counted() -> None:
    shards = _numbered()
    with pytest.raises(RuntimeError), shards.lease():
        raise RuntimeError("the provider failed")
    assert shards.in_flight == (0,)


def test_past_the_last_client_the_least_busy_one_takes_the_request() -> None:
    shards = _numbered()
    with ExitStack() as stack:
        for _ in range(MAX_CLIENTS * REQUESTS_PER_CLIENT):
            stack.enter_context(shards.lease())
        assert len(shards.clients) == MAX_CLIENTS
        with ExitStack() as some:
            some.enter_context(shards.lease())  # every client full: the first of the least busy
            assert shards.in_flight[0] == REQUESTS_PER_CLIENT + 1
            assert stack.enter_context(shards.lease()) == 1
        assert len(shards.clients) == MAX_CLIENTS
    assert set(shards.in_flight) == {0}


BURST = 2 * REQUESTS_PER_CLIENT + 4


@pytest.mark.parametrize("provider", ["openai-compatible", "gemini"])
def test_bursts_through_the_adapter_reuse_their_connections(provider: str, request: pytest.FixtureRequest) -> None:
    """Three bursts of concurrent streamed requests, then one alone, on one event loop: every answer whole,
    three clients (8 + 8 + 4 requests), and the second and third bursts open no connection (each client
    reuses its own idle ones), nor does the request alone."""
    if provider == "gemini":
        server: FakeLLMServer = request.getfixturevalue("gemini_llm")
        endpoint = server.gemini
        endpoint.default = delayed(streamed(gemini_text("All fine.")), 0.3)
    else:
        server = request.getfixturevalue("openai_llm")
        endpoint = server.chat
        endpoint.default = delayed(streamed(openai_text("All fine.")), 0.3)
    adapter = get_adapter(load_llm_config(load_settings()))
    assert isinstance(adapter, OpenAICompatibleAdapter | GeminiAdapter)
    hello = [ChatMessage(role="user", content="Hello")]

    async def bursts() -> tuple[list[set[int]], int]:
        ports = []
        for _ in range(3):
            seen = len(endpoint.requests)
            answers = await asyncio.gather(*(adapter.achat(hello) for _ in range(BURST)))
            assert [answer.content for answer in answers] == ["All fine."] * BURST
            ports.append({recorded.client_port for recorded in endpoint.requests[seen:]})
        assert len(adapter.clients.clients) == 3 and adapter.clients.in_flight == (0, 0, 0)
        await adapter.achat(hello)
        return ports, endpoint.requests[-1].client_port

    ports, alone = asyncio.run(bursts())
    assert len(ports[0]) == BURST and ports[1] == ports[0] and ports[2] == ports[0] and alone in ports[0]
