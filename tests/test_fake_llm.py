"""The fake LLM server itself: the wire formats the real SDKs accept, scripting and recording."""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest
from google import genai
from google.genai import types as gtypes

from fake_llm import (
    FakeLLMServer,
    delayed,
    error_reply,
    gemini_call,
    gemini_function_calls,
    hang,
    held,
    openai_text,
    openai_tool_calls,
    raw_reply,
    tool_call,
    transcription_reply,
)


def _openai(server: FakeLLMServer, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-fake", max_retries=0, timeout=timeout)


def test_openai_sdk_reads_scripted_replies_in_order_then_default(fake_llm: FakeLLMServer) -> None:
    client = _openai(fake_llm)
    fake_llm.chat.push(openai_text("first"), openai_tool_calls(tool_call("t", "{bad", id="")))
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m1", messages=messages)
    second = client.chat.completions.create(model="m2", messages=messages)
    third = client.chat.completions.create(model="m3", messages=messages)
    assert first.choices[0].message.content == "first"
    calls = second.choices[0].message.tool_calls
    assert calls is not None and calls[0].id == "" and calls[0].function.arguments == "{bad"  # type: ignore[union-attr]
    assert third.choices[0].message.content == "fake reply"
    assert [r.json["model"] for r in fake_llm.chat.requests] == ["m1", "m2", "m3"]
    assert fake_llm.chat.last.headers["authorization"] == "Bearer sk-fake"
    assert fake_llm.chat.pending == 0


def test_errors_and_unreadable_bodies_reach_the_sdk(fake_llm: FakeLLMServer) -> None:
    client = _openai(fake_llm)
    fake_llm.chat.push(error_reply(401, "bad key"), raw_reply(b"<html>nope"))
    with pytest.raises(openai.AuthenticationError, match="bad key"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(ValueError):  # the SDK surfaces the undecodable JSON as is
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])


def test_hang_makes_the_client_time_out_and_stop_releases_it() -> None:
    server = FakeLLMServer().start()
    try:
        server.chat.push(hang(30))
        client = _openai(server, timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    finally:
        started = time.monotonic()
        server.stop()
    assert time.monotonic() - started < 5


def test_delayed_reply_arrives(fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(delayed(openai_text("late"), 0.05))
    reply = _openai(fake_llm).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "late"


def test_a_held_reply_waits_for_its_release_and_no_longer(fake_llm: FakeLLMServer) -> None:
    release = threading.Event()
    fake_llm.chat.push(held(openai_text("released"), release, at_most=30))
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    reply = _openai(fake_llm).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "released"
    assert 0.5 <= time.monotonic() - started < 5


@pytest.mark.parametrize("fmt", ["json", "verbose_json", "text", "srt", "vtt"])
def test_transcription_answers_in_the_requested_format(fake_llm: FakeLLMServer, fmt: str) -> None:
    fake_llm.transcription.push(transcription_reply("hello world", [(0.0, 1.5, "hello"), (1.5, 2.0, " world")]))
    result = _openai(fake_llm).audio.transcriptions.create(
        model="whisper-1",
        file=("clip.wav", b"RIFFfake", "audio/wav"),
        response_format=fmt,  # type: ignore[call-overload]
    )
    request = fake_llm.transcription.last
    assert request.form["model"] == "whisper-1"
    assert request.files["file"].filename == "clip.wav"
    assert request.files["file"].data == b"RIFFfake"
    if fmt == "verbose_json":
        assert [s.end for s in result.segments or []] == [1.5, 2.0]
    elif fmt == "json":
        assert result.text == "hello world"
    elif fmt == "srt":
        assert "00:00:01,500 --> 00:00:02,000" in str(result)
    else:
        assert "hello" in str(result)


def test_gemini_sdk_through_http_options_and_env(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_llm.gemini.push(gemini_function_calls(gemini_call("t", {"a": 1}, id="c1", thought_signature=b"sig")))
    client = genai.Client(api_key="g-key", http_options=gtypes.HttpOptions(base_url=fake_llm.gemini_base_url))
    response = client.models.generate_content(model="gemini-x", contents="hi")
    part = response.candidates[0].content.parts[0]  # type: ignore[index, union-attr]
    assert part.function_call is not None and part.function_call.id == "c1"
    assert part.thought_signature == b"sig"
    assert fake_llm.gemini.last.model == "gemini-x"
    assert fake_llm.gemini.last.headers["x-goog-api-key"] == "g-key"

    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_llm.gemini_base_url)
    env_client = genai.Client(api_key="g-key")  # keep a reference: a collected Client closes its transport
    via_env = env_client.models.generate_content(model="gemini-y", contents="hi")
    assert via_env.text == "fake reply"
    assert fake_llm.gemini.last.model == "gemini-y"


def test_unknown_paths_answer_404_and_are_recorded(fake_llm: FakeLLMServer) -> None:
    response = httpx.post(f"{fake_llm.base_url}/nowhere", json={"a": 1})
    assert response.status_code == 404
    assert fake_llm.requests[-1].path == "/nowhere" and fake_llm.requests[-1].json == {"a": 1}
    fake_llm.reset()
    assert fake_llm.requests == []


def test_a_context_limit_refuses_openai_requests_as_openai_does(fake_llm: FakeLLMServer) -> None:
    client = _openai(fake_llm)
    fake_llm.chat.context_limit = 50
    fake_llm.chat.push(openai_text("answer"))
    short: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "hi there"}]
    long: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "word " * 60}]
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="m", messages=long)
    assert refused.value.status_code == 400 and refused.value.code == "context_length_exceeded"
    assert refused.value.param == "messages" and refused.value.type == "invalid_request_error"
    assert "maximum context length is 50 tokens. However, your messages resulted in 68 tokens" in str(refused.value)
    answer = client.chat.completions.create(model="m", messages=short)  # the queued reply was kept for it
    assert answer.choices[0].message.content == "answer"
    assert answer.usage is not None and answer.usage.prompt_tokens == fake_llm.chat.last.input_tokens == 9


def test_a_context_limit_refuses_gemini_requests_as_gemini_does(fake_llm: FakeLLMServer) -> None:
    client = genai.Client(api_key="k", http_options=gtypes.HttpOptions(base_url=fake_llm.gemini_base_url))
    fake_llm.gemini.context_limit = 50
    with pytest.raises(genai.errors.ClientError) as refused:
        client.models.generate_content(model="gemini-2.5-flash", contents="word " * 60)
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert refused.value.message == "The input token count (65) exceeds the maximum number of tokens allowed (50)."
    answer = client.models.generate_content(model="gemini-2.5-flash", contents="hi there")
    assert answer.usage_metadata is not None and answer.usage_metadata.prompt_token_count == 6
