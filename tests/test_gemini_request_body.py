"""The gemini adapter sends its history, system instruction and declarations as the API's JSON (in
``http_options.extra_body``, past google-genai's per-request conversion): the body must be the one the SDK
sends when given the same turns as its own typed objects, for every message shape we build."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from google import genai
from google.genai import types as gt

from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.providers.gemini_request import tool_schema_to_gemini
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolCall, ToolResult, ToolSchema
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_response,
    gemini_text,
)
from tests.request_body_support import SYSTEM, TOOLS

SIGNATURE = b"\xfb\xff\xfe signature"  # URL-safe base64 differs from the standard alphabet here
RESULT = {"segments": [{"startMs": 0, "text": "hi"}], "missing": None, "ratio": 0.5}


def gemini_turn() -> gt.Content:
    """A model turn as Gemini sends it: a thought, text, and two calls (one with Gemini's own id)."""
    return gt.Content(
        role="model",
        parts=[
            gt.Part(text="Thinking", thought=True, thought_signature=SIGNATURE),
            gt.Part(text="Let me look."),
            gt.Part(function_call=gt.FunctionCall(name="transcribe_video", args={"assetId": "a1"}, id="g-1")),
            gt.Part(function_call=gt.FunctionCall(name="transcribe_video", args={"assetId": "a2"})),
        ],
    )


def every_shape() -> list[ChatMessage]:
    """A history holding each message shape the adapter builds."""
    stored = {
        "gemini": {"content": gemini_turn().model_dump(mode="json", exclude_none=True), "callIds": {"g-1": "g-1"}}
    }
    calls = [
        ToolCall(id="g-1", name="transcribe_video", args={"assetId": "a1"}),
        ToolCall(id="ours-2", name="transcribe_video", args={"assetId": "a2"}),
    ]
    rebuilt = ToolCall(id="call_9", name="transcribe_video", args={"assetId": "a3", "nested": {"n": [1, None]}})
    return [
        ChatMessage(role="system", content="Be brief"),
        ChatMessage(role="user", content="What is said? 🎬"),
        ChatMessage(role="user", content="   "),  # blank: Gemini rejects an empty text part, so it is left out
        ChatMessage(role="assistant", content="Let me look.", tool_calls=calls, provider_metadata=stored),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="g-1", name="transcribe_video", result=RESULT)),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="ours-2", name="transcribe_video", error="no")),
        ChatMessage(role="assistant", content="Another provider's turn", tool_calls=[rebuilt]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="call_9", name="transcribe_video", result={})),
        ChatMessage(role="user", content="Thanks"),
        ChatMessage(role="assistant", content="You are welcome."),
        ChatMessage(role="user", content="Again"),
    ]


def typed_contents() -> list[gt.Content]:
    """The same history as the SDK's own objects, written out by hand."""

    def response(name: str, payload: dict[str, Any], call_id: str | None = None) -> gt.Part:
        return gt.Part(function_response=gt.FunctionResponse(name=name, response=payload, id=call_id))

    rebuilt = gt.FunctionCall(name="transcribe_video", args={"assetId": "a3", "nested": {"n": [1, None]}})
    return [
        gt.Content(role="user", parts=[gt.Part(text="What is said? 🎬")]),
        gemini_turn(),
        gt.Content(
            role="user",
            parts=[
                response("transcribe_video", {"output": RESULT}, "g-1"),
                response("transcribe_video", {"error": "no"}),
            ],
        ),
        gt.Content(role="model", parts=[gt.Part(text="Another provider's turn"), gt.Part(function_call=rebuilt)]),
        gt.Content(role="user", parts=[response("transcribe_video", {"output": {}}), gt.Part(text="Thanks")]),
        gt.Content(role="model", parts=[gt.Part(text="You are welcome.")]),
        gt.Content(role="user", parts=[gt.Part(text="Again")]),
    ]


def typed_call_body(server: FakeLLMServer, tools: list[ToolSchema]) -> bytes:
    """The body the SDK sends for the same request made the documented way (typed objects, converted)."""
    client = genai.Client(api_key=CANARY_API_KEY, http_options=gt.HttpOptions(base_url=server.gemini_base_url))
    declarations = [tool_schema_to_gemini(schema) for schema in tools]
    config = gt.GenerateContentConfig(
        system_instruction=f"{SYSTEM}\n\nBe brief",
        tools=[gt.Tool(function_declarations=declarations)] if declarations else None,
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
    )
    for _ in client.models.generate_content_stream(model="fake-model", contents=typed_contents(), config=config):
        pass
    return server.gemini.last.body


@pytest.mark.parametrize("tools", [TOOLS, []], ids=["with-tools", "without-tools"])
def test_the_history_sent_as_json_is_the_typed_calls_body(gemini_llm: FakeLLMServer, tools: list[ToolSchema]) -> None:
    history = every_shape()
    adapter = get_adapter(load_llm_config(load_settings()))
    assert adapter.chat(history, system_prompt=SYSTEM, tool_schemas=tools).content == "fake reply"
    first = gemini_llm.gemini.last.body
    adapter.chat(history, system_prompt=SYSTEM, tool_schemas=tools)  # the second request reuses what the first built
    assert gemini_llm.gemini.last.body == first
    # The same JSON; only the order of the top-level keys differs (the SDK adds the body's fields after its own).
    assert json.loads(first) == json.loads(typed_call_body(gemini_llm, tools))
    sent = gemini_llm.gemini.last.json
    assert len(sent["contents"]) == 7 and ("tools" in sent) == bool(tools)


def test_a_retried_request_resends_the_whole_history(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "2")
    gemini_llm.gemini.push(error_reply(429), error_reply(503), gemini_text("ok"))
    assert (
        get_adapter(load_llm_config(load_settings()))
        .chat(every_shape(), system_prompt=SYSTEM, tool_schemas=TOOLS)
        .content
        == "ok"
    )
    first, *retries = gemini_llm.gemini.requests
    assert len(retries) == 2 and all(retry.body == first.body for retry in retries)
    assert first.json["contents"][-1] == {"parts": [{"text": "Again"}], "role": "user"}


def test_a_turn_read_back_from_storage_is_sent_as_the_answer_just_stored(gemini_llm: FakeLLMServer) -> None:
    """The run's next request replays the answer's turn without validating it again; the same turn read back
    from storage (a JSON copy) is validated, and the two bodies must not differ."""
    call = gemini_call("transcribe_video", {"assetId": "a1"}, id="g-7", thought_signature=SIGNATURE)
    gemini_llm.gemini.push(gemini_function_calls(call, text="Looking"))
    adapter = get_adapter(load_llm_config(load_settings()))
    question = ChatMessage(role="user", content="What is said?")
    answer = adapter.chat([question], system_prompt=SYSTEM, tool_schemas=TOOLS)
    assert answer.tool_calls is not None
    [made] = answer.tool_calls
    result = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=made.id, name=made.name, result=RESULT))

    def replay(turn: ChatMessage) -> Any:
        adapter.chat([question, turn, result], system_prompt=SYSTEM, tool_schemas=TOOLS)
        return gemini_llm.gemini.last.json

    fresh = ChatMessage(
        role="assistant", content=answer.content, tool_calls=[made], provider_metadata=answer.provider_metadata
    )
    stored = ChatMessage.model_validate_json(fresh.model_dump_json())
    sent = replay(fresh)
    assert sent == replay(stored)
    [_, turn, _] = sent["contents"]
    assert turn["parts"][1]["functionCall"] == {"id": "g-7", "name": "transcribe_video", "args": {"assetId": "a1"}}
    assert base64.urlsafe_b64decode(turn["parts"][1]["thoughtSignature"]) == SIGNATURE


def test_a_part_the_sdk_does_not_know_is_not_stored_as_an_empty_part(gemini_llm: FakeLLMServer) -> None:
    """google-genai drops the fields it does not know from an answer, so a part of a newer kind reaches us
    empty; Gemini would refuse the next request with it (a part must hold one of its kinds)."""
    gemini_llm.gemini.push(gemini_response([{"text": "Answer."}, {"partOfANewKind": {"x": 1}}]))
    answer = get_adapter(load_llm_config(load_settings())).chat(
        [ChatMessage(role="user", content="Hi")], system_prompt=SYSTEM, tool_schemas=[]
    )
    assert answer.provider_metadata == {
        "gemini": {"content": {"parts": [{"text": "Answer."}], "role": "model"}, "callIds": {}}
    }


def _camel(data: Any) -> Any:
    if isinstance(data, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): _camel(value) for key, value in data.items()}
    return [_camel(item) for item in data] if isinstance(data, list) else data


def test_parts_we_only_replay_differ_from_the_typed_call_in_key_case_alone(gemini_llm: FakeLLMServer) -> None:
    """The SDK writes the nested fields of some parts in its own snake_case (``inlineData.mime_type``); ours are
    the API's camelCase, as Gemini sent them. Gemini reads both; nothing else differs."""
    parts: list[dict[str, Any]] = [
        {"text": "Here"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
        {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}, "videoMetadata": {"startOffset": "1s"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
    ]
    gemini_llm.gemini.push(gemini_response(parts))
    adapter = get_adapter(load_llm_config(load_settings()))
    question = ChatMessage(role="user", content="Hi")
    answer = adapter.chat([question], system_prompt="", tool_schemas=[])
    turn = ChatMessage(role="assistant", content=answer.content, provider_metadata=answer.provider_metadata)
    adapter.chat([question, turn], system_prompt="", tool_schemas=[])
    ours = gemini_llm.gemini.last.json
    assert ours["contents"][1]["parts"] == parts
    client = genai.Client(api_key=CANARY_API_KEY, http_options=gt.HttpOptions(base_url=gemini_llm.gemini_base_url))
    typed = [
        gt.Content(role="user", parts=[gt.Part(text="Hi")]),
        gt.Content.model_validate({"role": "model", "parts": parts}),
    ]
    config = gt.GenerateContentConfig(automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True))
    for _ in client.models.generate_content_stream(model="fake-model", contents=typed, config=config):
        pass
    theirs = gemini_llm.gemini.last.json
    assert theirs != ours and _camel(theirs) == ours
