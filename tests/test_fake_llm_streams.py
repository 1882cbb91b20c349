"""The fake LLM server's streams, read by the real SDKs: what a streaming adapter is tested against."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes
from openai.lib.streaming.chat import ChatCompletionStreamState

from fake_llm import (
    FakeLLMServer,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    not_streamed,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
)
from fake_llm.streams import StreamScript, split_text

USER: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def _openai(server: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-fake", max_retries=0, timeout=10)


def _gemini(server: FakeLLMServer) -> genai.Client:
    options = gtypes.HttpOptions(base_url=server.gemini_base_url, retry_options=gtypes.HttpRetryOptions(attempts=1))
    return genai.Client(api_key="fake", http_options=options)


def test_split_text_keeps_every_character_in_at_most_n_pieces() -> None:
    assert split_text("Hello world", 3) == ["Hell", "o wo", "rld"]
    assert split_text("ab", 5) == ["a", "b"]
    assert split_text("", 3) == [""]


def test_openai_stream_assembles_to_the_same_completion_the_whole_answer_is(fake_llm: FakeLLMServer) -> None:
    client = _openai(fake_llm)
    reply = openai_tool_calls(
        tool_call("t", {"a": 1}, id="call_1"), tool_call("u", {}, id="call_2"), content="Hi there"
    )
    fake_llm.chat.push(reply, reply)
    whole = client.chat.completions.create(model="m", messages=USER)
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    chunks = list(
        client.chat.completions.create(model="m", messages=USER, stream=True, stream_options={"include_usage": True})
    )
    for chunk in chunks:
        state.handle_chunk(chunk)
    assembled = state.get_final_completion()
    assert fake_llm.chat.last.streamed and not fake_llm.chat.requests[0].streamed
    assert [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content] == [
        "Hi ",
        "the",
        "re",
    ]
    message = assembled.choices[0].message
    assert message.content == whole.choices[0].message.content == "Hi there"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("call_1", "t", '{"a": 1}'),
        ("call_2", "u", "{}"),
    ]
    assert assembled.choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 10
    assert all(c.usage is None for c in chunks[:-1])


@pytest.mark.parametrize(
    ("usage", "include", "where"),
    [("separate", True, "own-chunk"), ("separate", False, None), ("none", True, None), ("with-finish", True, "finish")],
)
def test_openai_stream_usage_follows_stream_options_or_the_script(
    fake_llm: FakeLLMServer, usage: str, include: bool, where: str | None
) -> None:
    fake_llm.chat.push(streamed(openai_text("Hi"), StreamScript(usage=usage)))  # type: ignore[arg-type]
    chunks = list(
        _openai(fake_llm).chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": include}
        )
    )
    with_usage = [c for c in chunks if c.usage is not None]
    if where is None:
        assert with_usage == []
    else:
        assert len(with_usage) == 1
        assert (with_usage[0].choices == []) == (where == "own-chunk")


@pytest.mark.parametrize(
    ("fault", "error"),
    [("cut", openai.APIConnectionError), ("malformed", ValueError), ("error", openai.APIError)],
)
def test_openai_stream_faults_reach_the_sdk_after_the_first_pieces(
    fake_llm: FakeLLMServer, fault: str, error: type[Exception]
) -> None:
    fake_llm.chat.push(streamed(openai_text("Hello world"), StreamScript(fault=fault, fault_after=3)))  # type: ignore[arg-type]
    received: list[str] = []
    with pytest.raises(error):
        for chunk in _openai(fake_llm).chat.completions.create(model="m", messages=USER, stream=True):
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == "Hello wo"


def test_a_server_that_cannot_stream_answers_whole(fake_llm: FakeLLMServer) -> None:
    client = _openai(fake_llm)
    fake_llm.chat.push(not_streamed(openai_text("whole")))
    first = client.chat.completions.create(model="m", messages=USER, stream=True)
    fake_llm.streaming = False
    second = client.chat.completions.create(model="m", messages=USER, stream=True)
    for stream in (first, second):
        assert stream.response.headers["content-type"] == "application/json"
        stream.close()
    assert not any(r.streamed for r in fake_llm.chat.requests)


def test_stream_pieces_are_paced_and_a_client_that_closes_early_is_recorded(fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(streamed(openai_text("x" * 40), StreamScript(pieces=20, delay_seconds=0.05)))
    stream = _openai(fake_llm).chat.completions.create(model="m", messages=USER, stream=True)
    started = time.monotonic()
    next(stream), next(stream), next(stream)
    assert time.monotonic() - started >= 0.09  # two pauses between the three events
    stream.close()
    request = fake_llm.chat.last
    assert request.answered.wait(5)
    assert request.closed_by_client and request.events_sent < 20


def test_gemini_stream_sends_pieces_then_whole_calls_with_their_signatures(fake_llm: FakeLLMServer) -> None:
    fake_llm.gemini.push(
        gemini_function_calls(gemini_call("t", {"a": 1}, id="c1", thought_signature=b"sig"), text="Hi there")
    )
    client = _gemini(fake_llm)  # kept referenced: a collected client closes its transport
    responses = list(client.models.generate_content_stream(model="g", contents="x"))
    request = fake_llm.gemini.last
    assert request.path.endswith("/models/g:streamGenerateContent") and request.query == {"alt": ["sse"]}
    parts = [part for r in responses for part in (r.candidates or [])[0].content.parts or []]  # type: ignore[union-attr]
    assert [p.text for p in parts[:3]] == ["Hi ", "the", "re"]
    call = parts[3]
    assert call.function_call is not None and call.function_call.args == {"a": 1} and call.thought_signature == b"sig"
    assert [r.candidates[0].finish_reason for r in responses if r.candidates] == [None, None, None, "STOP"]
    usage = [r.usage_metadata for r in responses]
    assert [u.candidates_token_count for u in usage if u] == [None, None, None, 5]


def test_gemini_text_signature_can_come_on_an_empty_part_of_its_own(fake_llm: FakeLLMServer) -> None:
    fake_llm.gemini.push(
        streamed(gemini_text("Hi there", thought_signature=b"sig"), StreamScript(signature="empty-part"))
    )
    client = _gemini(fake_llm)  # kept referenced: a collected client closes its transport
    responses = list(client.models.generate_content_stream(model="g", contents="x"))
    parts = [part for r in responses for part in (r.candidates or [])[0].content.parts or []]  # type: ignore[union-attr]
    assert [(p.text, p.thought_signature) for p in parts] == [("Hi ", None), ("the", None), ("re", None), ("", b"sig")]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("cut", "RemoteProtocolError"),
        ("malformed", "UnknownApiResponseError"),
        ("error", "ServerError"),
    ],
)
def test_gemini_stream_faults_reach_the_async_sdk(fake_llm: FakeLLMServer, fault: str, error: str) -> None:
    fake_llm.gemini.push(streamed(gemini_text("Hello world"), StreamScript(fault=fault, fault_after=2)))  # type: ignore[arg-type]
    received: list[str] = []

    async def read() -> None:
        client = _gemini(fake_llm)
        async for response in await client.aio.models.generate_content_stream(model="g", contents="x"):
            received.append(response.text or "")

    with pytest.raises(Exception) as caught:
        asyncio.run(read())
    assert type(caught.value).__name__ == error
    assert "".join(received) == "Hello wo"
    if fault == "error":
        assert isinstance(caught.value, genai_errors.APIError) and caught.value.code == 500
