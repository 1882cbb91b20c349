"""The gemini adapter: the real ``google-genai`` SDK against the fake server, asserting the wire."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from agent_app.llm_config import load_llm_config
from agent_app.providers import ProviderError, get_adapter
from agent_app.providers.gemini import GeminiAdapter
from agent_app.providers.gemini_request import tool_schema_to_gemini
from agent_app.settings import load_settings
from agent_app.types import ChatMessage, ChatResponse, ToolCall, ToolParameter, ToolResult, ToolSchema
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_response,
    gemini_text,
    hang,
    raw_reply,
)
from tests.chat_support import stream_answer

TRANSCRIBE = ToolSchema(
    name="transcribe_video",
    description="Transcribe a video",
    parameters=[ToolParameter(key="assetId", type="string", required=False, description="Which asset")],
)
ID_RULE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _chat(*messages: ChatMessage, tools: list[ToolSchema] | None = None, system: str = "SYS") -> ChatResponse:
    return stream_answer(
        get_adapter(load_llm_config(load_settings())),
        list(messages) or [ChatMessage(role="user", content="Hello")],
        system_prompt=system,
        tool_schemas=tools or [],
    )


def _wire(server: FakeLLMServer) -> dict[str, Any]:
    body = server.gemini.last.json
    assert isinstance(body, dict)
    return body


def test_adapter_selected_by_config_gemini(gemini_llm: FakeLLMServer) -> None:
    adapter = get_adapter(load_llm_config(load_settings()))
    assert isinstance(adapter, GeminiAdapter)
    stream_answer(adapter, [ChatMessage(role="user", content="Hi")])
    request = gemini_llm.gemini.last
    assert request.model == "fake-model"
    assert request.path.endswith("/models/fake-model:streamGenerateContent")
    assert request.headers["x-goog-api-key"] == CANARY_API_KEY


def test_plain_chat_through_gemini(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(gemini_text("Hello! How can I help?"))
    response = _chat(ChatMessage(role="user", content="Hello"))
    assert response.content == "Hello! How can I help?"
    assert response.tool_calls is None
    wire = _wire(gemini_llm)
    assert wire["contents"] == [{"role": "user", "parts": [{"text": "Hello"}]}]
    assert "tools" not in wire


def test_system_prompt_mapping(gemini_llm: FakeLLMServer) -> None:
    _chat(ChatMessage(role="user", content="Hello"), system="You are a video editor")
    wire = _wire(gemini_llm)
    assert wire["systemInstruction"]["parts"] == [{"text": "You are a video editor"}]
    texts = [part.get("text") for content in wire["contents"] for part in content["parts"]]
    assert "You are a video editor" not in texts
    assert all(content["role"] in ("user", "model") for content in wire["contents"])


def test_system_messages_in_history_join_the_system_instruction(gemini_llm: FakeLLMServer) -> None:
    _chat(ChatMessage(role="system", content="Be brief"), ChatMessage(role="user", content="Hi"), system="Base")
    wire = _wire(gemini_llm)
    assert wire["systemInstruction"]["parts"] == [{"text": "Base\n\nBe brief"}]
    assert wire["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_tool_schema_type_mapping(gemini_llm: FakeLLMServer) -> None:
    schema = ToolSchema(
        name="cut",
        description="Cut a clip",
        parameters=[
            ToolParameter(key="assetId", type="string", required=True),
            ToolParameter(key="startMs", type="integer"),
            ToolParameter(key="speed", type="number"),
            ToolParameter(key="loop", type="boolean"),
            ToolParameter(key="tags", type="array"),
        ],
    )
    declaration = tool_schema_to_gemini(schema)
    assert declaration.parameters is not None and declaration.parameters.properties is not None
    assert str(declaration.parameters.properties["assetId"].type.value).lower() == "string"  # type: ignore[union-attr]
    _chat(tools=[schema])
    sent = _wire(gemini_llm)["tools"][0]["functionDeclarations"][0]
    assert sent["name"] == "cut" and sent["description"] == "Cut a clip"
    properties = sent["parameters"]["properties"]
    assert {key: value["type"] for key, value in properties.items()} == {
        "assetId": "STRING",
        "startMs": "INTEGER",
        "speed": "NUMBER",
        "loop": "BOOLEAN",
        "tags": "ARRAY",
    }
    assert properties["tags"]["items"] == {"type": "STRING"}
    assert sent["parameters"]["type"] == "OBJECT"
    assert sent["parameters"]["required"] == ["assetId"]


def test_adapter_translates_tool_schemas_to_wire_format(gemini_llm: FakeLLMServer) -> None:
    no_params = ToolSchema(name="echo_context", description="Echo", parameters=[])
    _chat(tools=[TRANSCRIBE, no_params])
    tools = _wire(gemini_llm)["tools"]
    assert len(tools) == 1 and set(tools[0]) == {"functionDeclarations"}
    declarations = tools[0]["functionDeclarations"]
    assert declarations[0]["parameters"]["properties"]["assetId"] == {"type": "STRING", "description": "Which asset"}
    assert "required" not in declarations[0]["parameters"]
    assert declarations[1] == {"name": "echo_context", "description": "Echo"}


def test_gemini_returns_function_calls(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(gemini_function_calls(gemini_call("transcribe_video", {})))
    response = _chat(tools=[TRANSCRIBE])
    assert response.tool_calls is not None and len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert call.name == "transcribe_video" and call.args == {}
    assert ID_RULE.match(call.id)


def test_gemini_adapter_synthesizes_tool_call_ids(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(
        gemini_function_calls(
            gemini_call("transcribe_video", {"assetId": "a1"}),
            gemini_call("transcribe_video", {"assetId": "a2"}, id=""),
            gemini_call("transcribe_video", {"assetId": "a3"}, id="gem-id-3"),
        )
    )
    calls = _chat(tools=[TRANSCRIBE]).tool_calls
    assert calls is not None
    ids = [call.id for call in calls]
    assert all(ID_RULE.match(call_id) for call_id in ids)
    assert len(set(ids)) == 3
    assert ids[2] == "gem-id-3"  # Gemini's own id is kept
    assert [call.args for call in calls] == [{"assetId": "a1"}, {"assetId": "a2"}, {"assetId": "a3"}]


def test_gemini_returns_text_despite_tools(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(gemini_text("No tool needed."))
    response = _chat(tools=[TRANSCRIBE])
    assert response.content == "No tool needed."
    assert response.tool_calls is None
    assert "tools" in _wire(gemini_llm)


def test_tool_results_and_signatures_are_replayed(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(
        gemini_function_calls(
            gemini_call("transcribe_video", {"assetId": "a1"}, thought_signature=b"\x00sig-one\xff"),
            gemini_call("echo_context", {}, id="gem-2"),
            text="Let me look.",
        ),
        gemini_text("Done."),
    )
    user = ChatMessage(role="user", content="Transcribe a1")
    first = _chat(user, tools=[TRANSCRIBE])
    assert first.content == "Let me look." and first.tool_calls is not None
    synthesized, given = first.tool_calls
    assistant = ChatMessage(
        role="assistant", content=first.content, tool_calls=first.tool_calls, provider_metadata=first.provider_metadata
    )
    # The metadata survives the route's JSON round trip (what the orchestrator stores and sends back).
    assistant = ChatMessage.model_validate_json(assistant.model_dump_json(by_alias=True))
    results = [
        ChatMessage(
            role="tool", tool_result=ToolResult(tool_call_id=synthesized.id, name=synthesized.name, result="hi")
        ),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=given.id, name=given.name, error="boom")),
    ]
    assert _chat(user, assistant, *results, tools=[TRANSCRIBE]).content == "Done."

    contents = _wire(gemini_llm)["contents"]
    assert [content["role"] for content in contents] == ["user", "model", "user"]
    model_parts = contents[1]["parts"]
    assert model_parts[0] == {"text": "Let me look."}
    assert model_parts[1]["functionCall"] == {"name": "transcribe_video", "args": {"assetId": "a1"}}
    assert base64.urlsafe_b64decode(model_parts[1]["thoughtSignature"]) == b"\x00sig-one\xff"
    assert model_parts[2]["functionCall"] == {"name": "echo_context", "args": {}, "id": "gem-2"}
    responses = [part["functionResponse"] for part in contents[2]["parts"]]
    assert responses == [
        {"name": "transcribe_video", "response": {"output": "hi"}},
        {"name": "echo_context", "id": "gem-2", "response": {"error": "boom"}},
    ]


def test_turns_without_gemini_metadata_are_rebuilt_without_ids(gemini_llm: FakeLLMServer) -> None:
    call = ToolCall(id="call_from_openai", name="transcribe_video", args={"assetId": "a1"})
    history = [
        ChatMessage(role="user", content="Transcribe"),
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id=call.id, name=call.name, result={"t": 1})),
    ]
    _chat(*history, tools=[TRANSCRIBE])
    contents = _wire(gemini_llm)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "transcribe_video", "args": {"assetId": "a1"}}}],
    }
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "transcribe_video", "response": {"output": {"t": 1}}}}
    ]


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(gemini_response([], finish_reason="MALFORMED_FUNCTION_CALL"), id="malformed-function-call"),
        pytest.param(gemini_response(None, candidates=[]), id="no-candidates"),
        pytest.param(gemini_response(None, finish_reason="SAFETY"), id="empty-candidate"),
        pytest.param(gemini_text(""), id="empty-text"),
        pytest.param(error_reply(500), id="500"),
        pytest.param(error_reply(429), id="429"),
        pytest.param(error_reply(401, f"API key not valid: {CANARY_API_KEY}"), id="401"),
        pytest.param(raw_reply(b"<html>oops"), id="unreadable"),
    ],
)
def test_gemini_failures_are_provider_errors_without_the_key(gemini_llm: FakeLLMServer, reply: Any) -> None:
    gemini_llm.gemini.push(reply)
    with pytest.raises(ProviderError) as caught:
        _chat(tools=[TRANSCRIBE])
    assert CANARY_API_KEY not in str(caught.value)


def test_gemini_retries_429_then_succeeds(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_MAX_RETRIES", "3")
    gemini_llm.gemini.push(error_reply(408), error_reply(429), error_reply(503), gemini_text("ok"))  # 408/429/5xx
    assert _chat().content == "ok"
    assert len(gemini_llm.gemini.requests) == 4


def test_gemini_hang_past_the_timeout_is_a_provider_error(
    gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch
) -> None:
    llm_env.setenv("LLM_TIMEOUT_SECONDS", "0.3")
    gemini_llm.gemini.push(hang(10))
    with pytest.raises(ProviderError, match="Timeout"):
        _chat()


def test_gemini_config_ignores_base_url(gemini_llm: FakeLLMServer, llm_env: pytest.MonkeyPatch) -> None:
    llm_env.setenv("LLM_BASE_URL", "http://127.0.0.1:9/never-used")
    assert load_llm_config(load_settings()).base_url is None
    assert _chat().content == "fake reply"
    assert gemini_llm.gemini.last.path.endswith("/models/fake-model:streamGenerateContent")
    assert all("never-used" not in request.path for request in gemini_llm.requests)


def test_user_side_parts_are_merged_so_turns_alternate(gemini_llm: FakeLLMServer) -> None:
    call = ToolCall(id="c1", name="transcribe_video", args={})
    history = [
        ChatMessage(role="user", content="First"),
        ChatMessage(role="user", content="Second"),
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="transcribe_video", error="x")),
        ChatMessage(role="user", content="Try again"),
    ]
    _chat(*history, tools=[TRANSCRIBE])
    contents = _wire(gemini_llm)["contents"]
    assert [content["role"] for content in contents] == ["user", "model", "user"]
    assert contents[0]["parts"] == [{"text": "First"}, {"text": "Second"}]
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "transcribe_video"
    assert contents[2]["parts"][1] == {"text": "Try again"}


def test_thought_parts_are_not_content(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(gemini_response([{"text": "thinking...", "thought": True}, {"text": "Answer."}]))
    response = _chat()
    assert response.content == "Answer."
    assert response.provider_metadata is not None and "gemini" in response.provider_metadata


def test_cached_turns_follow_changed_metadata(gemini_llm: FakeLLMServer) -> None:
    gemini_llm.gemini.push(
        gemini_text("one", thought_signature=b"first"), gemini_text("ok"), gemini_text("two", thought_signature=b"2nd")
    )
    user = ChatMessage(role="user", content="Hi")
    first = _chat(user)
    assistant = ChatMessage(id="fixed-id", role="assistant", content="one", provider_metadata=first.provider_metadata)
    _chat(user, assistant, ChatMessage(role="user", content="again"))
    sent = _wire(gemini_llm)["contents"][1]["parts"][0]["thoughtSignature"]
    assert base64.urlsafe_b64decode(sent) == b"first"
    second = _chat(user)
    changed = assistant.model_copy(update={"provider_metadata": second.provider_metadata})
    _chat(user, changed, ChatMessage(role="user", content="again"))
    sent = _wire(gemini_llm)["contents"][1]["parts"][0]["thoughtSignature"]
    assert base64.urlsafe_b64decode(sent) == b"2nd"


def test_unusable_stored_metadata_falls_back_to_our_fields(gemini_llm: FakeLLMServer) -> None:
    call = ToolCall(id="c1", name="transcribe_video", args={"assetId": "a1"})
    broken = {"gemini": {"content": {"parts": "not a list"}, "callIds": {"c1": "gem-1"}}}
    history = [
        ChatMessage(role="user", content="Transcribe"),
        ChatMessage(role="assistant", tool_calls=[call], provider_metadata=broken),
        ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name=call.name, result="ok")),
    ]
    assert _chat(*history, tools=[TRANSCRIBE]).content == "fake reply"
    contents = _wire(gemini_llm)["contents"]
    assert contents[1]["parts"] == [{"functionCall": {"name": "transcribe_video", "args": {"assetId": "a1"}}}]
    assert contents[2]["parts"] == [{"functionResponse": {"name": "transcribe_video", "response": {"output": "ok"}}}]


@pytest.mark.parametrize(
    "content",
    [
        {"parts": [{"text": "one"}]},
        {"parts": [{"text": "one"}], "role": "user"},
        {"parts": [], "role": "model"},
        {"parts": [{}, {"text": "one"}], "role": "model"},
    ],
    ids=["no-role", "user-role", "no-parts", "an-empty-part"],
)
def test_stored_turns_gemini_would_refuse_are_not_replayed_as_they_are(
    gemini_llm: FakeLLMServer, content: dict[str, Any]
) -> None:
    """A route's client may send any ``Content`` as a turn's metadata: it still goes out as a model turn with
    parts, none empty (Gemini refuses a content without a valid role, with no parts, or with an empty one)."""
    stored = ChatMessage(role="assistant", content="one", provider_metadata={"gemini": {"content": content}})
    _chat(ChatMessage(role="user", content="Hi"), stored, ChatMessage(role="user", content="again"))
    assert _wire(gemini_llm)["contents"][1] == {"parts": [{"text": "one"}], "role": "model"}
