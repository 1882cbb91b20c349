"""Streamed answers through the typed handler, on both providers, against the fake server's real wire formats:
text arrives in pieces as it comes, the assembled answer is the one a whole response gives, usage is carried,
a broken stream is a provider error with the text so far, and a cancel closes the response at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from openai.types.chat import ChatCompletionChunk

from agent_app.chat_handler import ChatHandler
from agent_app.errors import PROVIDER_ERROR, ChatError, ErrorKind
from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.providers.openai_stream import CompletionAssembler
from agent_app.settings import load_settings
from agent_app.types import Cancellation, ChatMessage, ChatRequest, ChatResponse, StopRequested, TokenUsage
from fake_llm import (
    FakeLLMServer,
    Reply,
    delayed,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    not_streamed,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
)
from fake_llm.streams import StreamScript

HELLO = ChatRequest(messages=[ChatMessage(role="user", content="Hello")])
TEXT = "Hello there, streamed world"
USAGE = TokenUsage(input_tokens=10, output_tokens=5)


def _text_reply(provider: str, text: str = TEXT) -> Reply:
    return openai_text(text) if provider == "openai" else gemini_text(text)


def _script(server: FakeLLMServer, provider: str) -> Callable[..., None]:
    return server.chat.push if provider == "openai" else server.gemini.push


@pytest.fixture(params=["openai", "gemini"])
def provider(request: pytest.FixtureRequest) -> tuple[str, FakeLLMServer]:
    name = str(request.param)
    return name, request.getfixturevalue("openai_llm" if name == "openai" else "gemini_llm")


def test_text_arrives_in_pieces_before_the_answer_with_its_usage(provider: tuple[str, FakeLLMServer]) -> None:
    name, server = provider
    _script(server, name)(streamed(_text_reply(name), StreamScript(pieces=4, delay_seconds=0.05)))
    pieces: list[tuple[str, float]] = []
    answer = ChatHandler(load_settings()).send(HELLO, on_text=lambda delta: pieces.append((delta, time.monotonic())))
    finished = time.monotonic()
    assert [delta for delta, _ in pieces] == ["Hello t", "here, s", "treamed", " world"]
    assert "".join(delta for delta, _ in pieces) == answer.content == TEXT
    assert pieces[-1][1] - pieces[0][1] >= 0.05 and finished >= pieces[-1][1]  # paced, before the answer
    assert answer.usage == USAGE


def _both_ways(server: FakeLLMServer, name: str, reply: Reply, **stream: object) -> tuple[ChatResponse, ChatResponse]:
    _script(server, name)(not_streamed(reply), streamed(reply, StreamScript(**stream)))  # type: ignore[arg-type]
    whole = ChatHandler(load_settings()).send(HELLO)
    in_pieces = ChatHandler(load_settings()).send(HELLO)
    recorded = server.chat.requests if name == "openai" else server.gemini.requests
    assert [r.streamed for r in recorded[-2:]] == [False, True]
    return whole, in_pieces


def test_openai_tool_call_deltas_assemble_into_the_calls_a_whole_answer_has(openai_llm: FakeLLMServer) -> None:
    reply = openai_tool_calls(
        tool_call("transcribe_video", {"assetId": "a1", "language": "en"}, id="call_a"),
        tool_call("echo_context", {}, id="call_b"),
        content="Let me look.",
    )
    whole, in_pieces = _both_ways(openai_llm, "openai", reply, pieces=6)
    assert in_pieces == whole
    assert [(c.id, c.name, c.args) for c in in_pieces.tool_calls or []] == [
        ("call_a", "transcribe_video", {"assetId": "a1", "language": "en"}),
        ("call_b", "echo_context", {}),
    ]
    assert in_pieces.content == "Let me look." and in_pieces.usage == USAGE
    assert openai_llm.chat.last.json["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("signature", ["on-text", "empty-part"])
def test_gemini_calls_and_signatures_are_stored_as_a_whole_answer_stores_them(
    gemini_llm: FakeLLMServer, signature: str
) -> None:
    reply = gemini_function_calls(
        gemini_call("transcribe_video", {"assetId": "a1"}, id="g1", thought_signature=b"call-sig"),
        gemini_call("echo_context", {}, thought_signature=None),
        text="Let me look.",
    )
    whole, in_pieces = _both_ways(gemini_llm, "gemini", reply, pieces=5)
    streamed_turn, whole_turn = (r.provider_metadata["gemini"] for r in (in_pieces, whole))  # type: ignore[index]
    assert streamed_turn["content"] == whole_turn["content"]
    assert list(streamed_turn["callIds"].values()) == list(whole_turn["callIds"].values()) == ["g1", None]
    assert (in_pieces.content, in_pieces.tool_calls is not None) == (whole.content, True)
    assert [(c.name, c.args) for c in in_pieces.tool_calls or []] == [(c.name, c.args) for c in whole.tool_calls or []]
    signed = gemini_text("A signed answer.", thought_signature=b"text-sig")
    whole, in_pieces = _both_ways(gemini_llm, "gemini", signed, pieces=4, signature=signature)
    assert in_pieces.provider_metadata == whole.provider_metadata
    parts = (in_pieces.provider_metadata or {})["gemini"]["content"]["parts"]
    assert parts == [{"text": "A signed answer.", "thoughtSignature": "dGV4dC1zaWc="}]


@pytest.mark.parametrize("usage", ["none", "with-finish", "separate"])
def test_a_server_ignoring_stream_options_or_sending_usage_anywhere_still_answers(
    openai_llm: FakeLLMServer, usage: str
) -> None:
    openai_llm.chat.push(streamed(openai_text(TEXT), StreamScript(usage=usage)))  # type: ignore[arg-type]
    answer = ChatHandler(load_settings()).send(HELLO)
    assert answer.content == TEXT
    assert answer.usage == (None if usage == "none" else USAGE)


def test_a_server_that_cannot_stream_still_answers(provider: tuple[str, FakeLLMServer]) -> None:
    name, server = provider
    server.streaming = False
    _script(server, name)(_text_reply(name))
    pieces: list[str] = []
    answer = ChatHandler(load_settings()).send(HELLO, on_text=pieces.append)
    assert answer.content == TEXT and answer.usage == USAGE
    assert pieces == ([] if name == "openai" else [TEXT])  # Gemini's SDK reads a whole body as one event


@pytest.mark.parametrize("fault", ["cut", "malformed", "error"])
def test_a_broken_stream_is_a_provider_error_keeping_the_text_so_far(
    provider: tuple[str, FakeLLMServer], fault: str
) -> None:
    name, server = provider
    after = 3 if name == "openai" else 2  # OpenAI's first chunk carries only the role
    _script(server, name)(streamed(_text_reply(name), StreamScript(pieces=4, fault=fault, fault_after=after)))  # type: ignore[arg-type]
    pieces: list[str] = []
    with pytest.raises(ChatError) as caught:
        ChatHandler(load_settings()).send(HELLO, on_text=pieces.append)
    assert caught.value.kind is ErrorKind.PROVIDER_FAILED and str(caught.value) == PROVIDER_ERROR
    assert pieces == ["Hello t", "here, s"]
    assert caught.value.partial_text == "Hello there, s"


def test_cancel_closes_the_provider_response_at_once_keeping_the_text_so_far(
    provider: tuple[str, FakeLLMServer],
) -> None:
    name, server = provider
    _script(server, name)(streamed(_text_reply(name, "x" * 40), StreamScript(pieces=40, delay_seconds=0.2)))
    cancel = Cancellation()
    pieces: list[str] = []

    def on_text(delta: str) -> None:
        pieces.append(delta)
        if len(pieces) == 2:
            cancel.set()

    started = time.monotonic()
    with pytest.raises(StopRequested) as caught:
        ChatHandler(load_settings()).send(HELLO, on_text=on_text, cancellation=cancel)
    assert time.monotonic() - started < 1.5  # 40 pieces would take 8 s
    assert caught.value.partial_text == "xx"
    request = server.chat.last if name == "openai" else server.gemini.last
    assert request.answered.wait(2)  # the server saw the connection closed at its next write
    assert request.closed_by_client and request.events_sent < 10


def _chunk(delta: dict[str, object], finish: str | None = None) -> ChatCompletionChunk:
    return ChatCompletionChunk.construct(
        id="c",
        object="chat.completion.chunk",
        created=0,
        model="m",
        choices=[{"index": 0, "delta": delta, "finish_reason": finish}],
    )


def test_tool_call_deltas_of_lax_servers_assemble_into_whole_calls() -> None:
    """Servers that repeat the id and name in every delta, split a name, or leave out the index."""
    assembler = CompletionAssembler()
    deltas: list[dict[str, object]] = [
        {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "transcribe_video", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "transcribe_video", "arguments": '{"a'}}]},
        {"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": '": 1}'}}]},
        {"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "echo_", "arguments": "{"}}]},
        {"tool_calls": [{"index": 1, "function": {"name": "context", "arguments": "}"}}]},
        {"tool_calls": [{"id": "call_3", "function": {"name": "third", "arguments": "{}"}}]},
    ]
    for delta in deltas:
        assembler.add(_chunk(delta))
    assembler.add(_chunk({}, "tool_calls"))
    message = assembler.message()
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("call_1", "transcribe_video", '{"a": 1}'),
        ("call_2", "echo_context", "{}"),
        ("call_3", "third", "{}"),
    ]


def test_awaiting_callers_get_answers_on_their_own_loops_and_cancelling_closes_the_response(
    provider: tuple[str, FakeLLMServer],
) -> None:
    """The HTTP route awaits the adapter on the server's loop: each loop gets a client of its own (an async
    client's connections belong to one loop), and cancelling the task closes the provider's response."""
    name, server = provider
    adapter = get_adapter(load_llm_config(load_settings()))
    for text in ("first loop", "second loop"):
        _script(server, name)(_text_reply(name, text))
        pieces: list[str] = []
        answer = asyncio.run(adapter.stream(HELLO.messages, system_prompt="", tool_schemas=[], on_text=pieces.append))
        assert answer.content == "".join(pieces) == text

    async def cancelled() -> list[str]:
        _script(server, name)(streamed(_text_reply(name, "x" * 40), StreamScript(pieces=40, delay_seconds=0.2)))
        seen: list[str] = []
        task = asyncio.ensure_future(
            adapter.stream(HELLO.messages, system_prompt="", tool_schemas=[], on_text=seen.append)
        )
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert asyncio.run(cancelled()) == ["x", "x"]
    request = server.chat.last if name == "openai" else server.gemini.last
    assert request.answered.wait(2) and request.closed_by_client and request.events_sent < 10


BURST = 20


def test_bursts_of_concurrent_requests_reuse_their_connections(provider: tuple[str, FakeLLMServer]) -> None:
    """Three bursts of concurrent streamed requests, then one alone, on one event loop and its one client: every
    answer whole, and the second and third bursts open no connection (the pool keeps its idle ones), nor does
    the request alone."""
    name, server = provider
    endpoint = server.chat if name == "openai" else server.gemini
    endpoint.default = delayed(streamed(_text_reply(name, "All fine.")), 0.3)
    adapter = get_adapter(load_llm_config(load_settings()))

    async def bursts() -> tuple[list[set[int]], int]:
        ports = []
        for _ in range(3):
            seen = len(endpoint.requests)
            answers = await asyncio.gather(
                *(
                    adapter.stream(HELLO.messages, system_prompt="", tool_schemas=[], on_text=lambda _: None)
                    for _ in range(BURST)
                )
            )
            assert [answer.content for answer in answers] == ["All fine."] * BURST
            ports.append({recorded.client_port for recorded in endpoint.requests[seen:]})
        await adapter.stream(HELLO.messages, system_prompt="", tool_schemas=[], on_text=lambda _: None)
        return ports, endpoint.requests[-1].client_port

    ports, alone = asyncio.run(bursts())
    assert len(ports[0]) == BURST and ports[1] == ports[0] and ports[2] == ports[0] and alone in ports[0]
