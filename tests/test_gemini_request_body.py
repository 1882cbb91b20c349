"""What Gemini receives from the gemini adapter (google-genai's typed call) for every message shape we build:
the system instruction, the declarations, replayed turns with their signatures and ids, tool results."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from google.genai import types as gt

from agent_app.llm_config import load_llm_config
from agent_app.providers import get_adapter
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ToolCall, ToolResult, ToolSchema
from fake_llm import (
    FakeLLMServer,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_response,
    gemini_text,
)
from tests.chat_support import stream_answer
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


SENT_CONTENTS: list[dict[str, Any]] = [
    {"parts": [{"text": "What is said? 🎬"}], "role": "user"},
    {
        "parts": [
            {"text": "Thinking", "thought": True, "thoughtSignature": base64.urlsafe_b64encode(SIGNATURE).decode()},
            {"text": "Let me look."},
            {"functionCall": {"id": "g-1", "args": {"assetId": "a1"}, "name": "transcribe_video"}},
            {"functionCall": {"args": {"assetId": "a2"}, "name": "transcribe_video"}},
        ],
        "role": "model",
    },
    {
        "parts": [
            {"functionResponse": {"id": "g-1", "name": "transcribe_video", "response": {"output": RESULT}}},
            {"functionResponse": {"name": "transcribe_video", "response": {"error": "no"}}},
        ],
        "role": "user",
    },
    {
        "parts": [
            {"text": "Another provider's turn"},
            {"functionCall": {"args": {"assetId": "a3", "nested": {"n": [1, None]}}, "name": "transcribe_video"}},
        ],
        "role": "model",
    },
    {
        "parts": [{"functionResponse": {"name": "transcribe_video", "response": {"output": {}}}}, {"text": "Thanks"}],
        "role": "user",
    },
    {"parts": [{"text": "You are welcome."}], "role": "model"},
    {"parts": [{"text": "Again"}], "role": "user"},
]
"""What Gemini receives for :func:`every_shape`: the stored turn (from an earlier release, in the SDK's field
names) replayed with its signature and Gemini's id, results grouped per turn, the blank message left out."""

DECLARATIONS = [
    {
        "functionDeclarations": [
            {
                "description": "Transcribe a video",
                "name": "transcribe_video",
                "parameters": {
                    "properties": {
                        "assetId": {"description": "Which asset", "type": "STRING"},
                        "tags": {"items": {"type": "STRING"}, "type": "ARRAY"},
                        "startMs": {"type": "INTEGER"},
                    },
                    "required": ["assetId"],
                    "type": "OBJECT",
                },
            }
        ]
    }
]


@pytest.mark.parametrize("tools", [TOOLS, []], ids=["with-tools", "without-tools"])
def test_every_message_shape_reaches_gemini_as_its_api_reads_it(
    gemini_llm: FakeLLMServer, tools: list[ToolSchema]
) -> None:
    history = every_shape()
    adapter = get_adapter(load_llm_config(load_settings()))
    assert stream_answer(adapter, history, system_prompt=SYSTEM, tool_schemas=tools).content == "fake reply"
    sent = gemini_llm.gemini.last.json
    assert sent["contents"] == SENT_CONTENTS
    assert sent["systemInstruction"] == {"parts": [{"text": f"{SYSTEM}\n\nBe brief"}], "role": "user"}
    assert sent.get("tools") == (DECLARATIONS if tools else None)
    first = gemini_llm.gemini.last.body
    stream_answer(adapter, history, system_prompt=SYSTEM, tool_schemas=tools)
    assert gemini_llm.gemini.last.body == first


def test_a_retried_request_resends_the_whole_history(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "2")
    gemini_llm.gemini.push(error_reply(429), error_reply(503), gemini_text("ok"))
    assert (
        stream_answer(
            get_adapter(load_llm_config(load_settings())), every_shape(), system_prompt=SYSTEM, tool_schemas=TOOLS
        ).content
        == "ok"
    )
    first, *retries = gemini_llm.gemini.requests
    assert len(retries) == 2 and all(retry.body == first.body for retry in retries)
    assert first.json["contents"][-1] == {"parts": [{"text": "Again"}], "role": "user"}


def test_a_turn_read_back_from_storage_is_sent_as_the_answer_just_stored(gemini_llm: FakeLLMServer) -> None:
    """The run's next request replays the answer's turn as stored; the same turn read back from storage (a JSON
    copy) is sent the same."""
    call = gemini_call("transcribe_video", {"assetId": "a1"}, id="g-7", thought_signature=SIGNATURE)
    gemini_llm.gemini.push(gemini_function_calls(call, text="Looking"))
    adapter = get_adapter(load_llm_config(load_settings()))
    question = ChatMessage(role="user", content="What is said?")
    answer = stream_answer(adapter, [question], system_prompt=SYSTEM, tool_schemas=TOOLS)
    assert answer.tool_calls is not None
    [made] = answer.tool_calls
    result = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=made.id, name=made.name, result=RESULT))

    def replay(turn: ChatMessage) -> Any:
        stream_answer(adapter, [question, turn, result], system_prompt=SYSTEM, tool_schemas=TOOLS)
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
    answer = stream_answer(
        get_adapter(load_llm_config(load_settings())),
        [ChatMessage(role="user", content="Hi")],
        system_prompt=SYSTEM,
        tool_schemas=[],
    )
    assert answer.provider_metadata == {
        "gemini": {"content": {"parts": [{"text": "Answer."}], "role": "model"}, "callIds": {}}
    }


def _camel(data: Any) -> Any:
    if isinstance(data, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): _camel(value) for key, value in data.items()}
    return [_camel(item) for item in data] if isinstance(data, list) else data


def test_parts_we_only_replay_reach_gemini_whole(gemini_llm: FakeLLMServer) -> None:
    """Parts of kinds we never build (inline data, files, code results) are replayed with all they hold; the SDK
    writes some nested fields in its own snake_case (``inlineData.mime_type``), which Gemini reads too."""
    parts: list[dict[str, Any]] = [
        {"text": "Here"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
        {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}, "videoMetadata": {"startOffset": "1s"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
    ]
    gemini_llm.gemini.push(gemini_response(parts))
    adapter = get_adapter(load_llm_config(load_settings()))
    question = ChatMessage(role="user", content="Hi")
    answer = stream_answer(adapter, [question], system_prompt="", tool_schemas=[])
    assert answer.provider_metadata == {"gemini": {"content": {"parts": parts, "role": "model"}, "callIds": {}}}
    turn = ChatMessage(role="assistant", content=answer.content, provider_metadata=answer.provider_metadata)
    stream_answer(adapter, [question, turn], system_prompt="", tool_schemas=[])
    assert _camel(gemini_llm.gemini.last.json["contents"][1]["parts"]) == parts
