"""The orchestrator loop, driven by a scripted ChatClient (the network boundary) over real stores,
real registries and test-defined tools."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agent_app.errors import ChatError, ErrorKind, provider_failure
from agent_app.orchestrator import ITERATION_LIMIT_MESSAGE, Orchestrator, OrchestratorBusyError
from agent_app.orchestrator_options import MAX_ITERATIONS, OrchestratorOptions
from agent_app.providers.provider_loop import TextSink
from agent_app.registry import ToolRegistry
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import (
    AgentContext,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ExecutionState,
    MediaAsset,
    ToolCall,
    ToolDefinition,
    ToolEnvironment,
    ToolParameter,
    ToolResult,
)
from tests.tool_support import dict_body, make_tool

Reply = ChatResponse | BaseException | Callable[[ChatRequest], ChatResponse]


class ScriptedClient:
    """A ChatClient that answers from a script and records every request's wire form."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def send(
        self, request: ChatRequest, *, on_text: TextSink | None = None, cancellation: object = None
    ) -> ChatResponse:
        self.requests.append(request.to_wire())
        if not self.replies:
            raise AssertionError("the orchestrator sent more requests than scripted")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        return reply(request)


class RecordingListener:
    """An OrchestratorListener that records every event, optionally failing on each."""

    def __init__(self, fail: bool = False) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.fail = fail

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        self.events.append(("status", status, active_tool))
        if self.fail:
            raise RuntimeError("listener broke")

    def on_message(self, message: ChatMessage) -> None:
        self.events.append(("message", message.role))
        if self.fail:
            raise RuntimeError("listener broke")

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        self.events.append(("progress", call.name, fraction, message))
        if self.fail:
            raise RuntimeError("listener broke")


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "") -> ChatResponse:
    return ChatResponse(
        content=content,
        tool_calls=[ToolCall(id=f"call-{i}-{name}", name=name, args=args) for i, (name, args) in enumerate(calls)],
    )


def answer(text: str) -> ChatResponse:
    return ChatResponse(content=text, tool_calls=[])


class Harness:
    """Fresh stores over one session-state dict, a registry and a user message, ready to run."""

    def __init__(
        self, client: ScriptedClient, *tools: ToolDefinition[Any], registry: ToolRegistry | None = None
    ) -> None:
        self.state: dict[str, Any] = {}
        self.chat = ChatStore(self.state)
        self.agent = AgentStore(self.state)
        self.registry = registry if registry is not None else ToolRegistry()
        for tool in tools:
            self.registry.register_tool(tool)
        self.client = client
        self.listener = RecordingListener()
        self.user = self.chat.add_message({"role": "user", "content": "Hello"})

    def orchestrator(self, **kwargs: Any) -> Orchestrator:
        kwargs.setdefault("listener", self.listener)
        return Orchestrator(self.client, self.registry, self.chat, self.agent, OrchestratorOptions(**kwargs))

    def run(self, **kwargs: Any) -> list[ChatMessage]:
        self.orchestrator(**kwargs).run()
        return self.chat.messages

    def tool_results(self) -> list[ToolResult]:
        return [m.tool_result for m in self.chat.messages if m.tool_result is not None]


def assert_history_consistent(messages: list[ChatMessage]) -> None:
    """Every assistant tool call is answered, in order, by exactly one tool message right after it."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            answered = [
                m.tool_result.tool_call_id
                for m in messages[index : index + len(message.tool_calls)]
                if m.tool_result is not None
            ]
            assert answered == [call.id for call in message.tool_calls]
            index += len(message.tool_calls)
        else:
            assert message.role != "tool", "a tool message that answers no call"


def assert_finished(h: Harness, status: ExecutionState = "idle") -> None:
    assert h.agent.status == status
    assert h.agent.active_tool is None
    assert h.chat.loading is False
    assert h.chat.messages[0] == h.user
    assert_history_consistent(h.chat.messages)


# -- Orchestrator Shell scenarios ------------------------------------------------------------------


def test_happy_path_with_no_tool_calls() -> None:
    h = Harness(ScriptedClient(ChatResponse(content="Hello!", tool_calls=[], provider_metadata={"raw": "turn"})))

    messages = h.run()

    assert [(m.role, m.content) for m in messages] == [("user", "Hello"), ("assistant", "Hello!")]
    assert messages[1].provider_metadata == {"raw": "turn"}
    assert h.chat.error is None
    assert_finished(h)
    assert h.client.requests[0]["messages"] == [h.user.to_wire()]
    statuses = [e[1] for e in h.listener.events if e[0] == "status"]
    assert statuses == ["sending", "responding", "idle"]


def test_tool_call_then_final_answer() -> None:
    seen: list[tuple[dict[str, Any], AgentContext | None]] = []

    def transcribe(args: dict[str, Any], env: ToolEnvironment) -> dict[str, Any]:
        seen.append((args, env.context))
        env.report_progress(0.5, "halfway")
        return {"assetId": "a1", "segments": [{"startMs": 0, "endMs": 900, "text": "hello world"}]}

    # The real tool's declared parameters, with a working body: the point is the loop, not speech.
    real = build_tool_registry(["transcribe_video"]).get("transcribe_video")
    assert real is not None
    tool = dataclasses.replace(real, execute=dict_body(transcribe))
    client = ScriptedClient(
        ChatResponse(
            content="",
            tool_calls=[ToolCall(id="c1", name="transcribe_video", args={})],
            provider_metadata={"sig": "abc"},
        ),
        answer("Here is the transcription: hello world"),
    )
    h = Harness(client, tool)
    context = AgentContext(project_id="p1", media_assets=[MediaAsset(id="a1", name="clip.mp4")], active_asset_id="a1")
    h.agent.set_context(context)

    messages = h.run()

    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    call_message, tool_message, final = messages[1], messages[2], messages[3]
    assert call_message.tool_calls == [ToolCall(id="c1", name="transcribe_video", args={})]
    assert call_message.provider_metadata == {"sig": "abc"}
    assert tool_message.tool_result is not None
    assert tool_message.tool_result.tool_call_id == "c1"
    assert tool_message.tool_result.result["segments"][0]["text"] == "hello world"
    assert tool_message.tool_result.error is None
    assert tool_message.tool_result.duration_ms is not None
    assert tool_message.content.startswith("transcribe_video finished")
    assert final.content == "Here is the transcription: hello world"
    assert_finished(h)
    assert seen == [({}, context)]
    # The second request carried the whole history, tool result included, in the wire format.
    second = client.requests[1]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert second["messages"][2]["toolResult"]["toolCallId"] == "c1"
    assert second["context"]["activeAssetId"] == "a1"
    assert ("progress", "transcribe_video", 0.5, "halfway") in h.listener.events
    assert ("status", "processing", "transcribe_video") in h.listener.events


def test_error_during_tool_execution_per_tool_recovery() -> None:
    def transcribe(args: dict[str, Any], env: ToolEnvironment) -> Any:
        raise FileNotFoundError("media file clip.mp4 is missing")

    client = ScriptedClient(
        tool_calls(("transcribe_video", {})),
        answer("I could not find the media file."),
    )
    h = Harness(client, make_tool("transcribe_video", transcribe))

    messages = h.run()

    results = h.tool_results()
    assert len(results) == 1
    assert results[0].error == "FileNotFoundError: media file clip.mp4 is missing"
    assert results[0].result is None
    assert "Traceback" not in results[0].error
    assert messages[2].content == "transcribe_video failed: FileNotFoundError: media file clip.mp4 is missing"
    # The loop went on: the error was sent back and the model answered.
    assert client.requests[1]["messages"][2]["toolResult"]["error"].startswith("FileNotFoundError")
    assert messages[-1].content == "I could not find the media file."
    assert h.chat.error is None
    assert_finished(h)


def test_real_placeholder_tool_failure_is_recovered() -> None:
    # Whatever the real transcribe_video does with no media library, the run must end consistently.
    client = ScriptedClient(tool_calls(("transcribe_video", {})), answer("Sorry."))
    h = Harness(client, registry=build_tool_registry(["transcribe_video"]))
    h.run()
    assert len(h.tool_results()) == 1
    assert h.chat.messages[-1].content == "Sorry."
    assert_finished(h)


def test_several_tool_calls_run_in_order_and_keep_their_order() -> None:
    order: list[str] = []

    def first(args: dict[str, Any], env: ToolEnvironment) -> str:
        order.append("first")
        return "one"

    def second(args: dict[str, Any], env: ToolEnvironment) -> str:
        order.append("second")
        raise ValueError("two failed")

    client = ScriptedClient(
        tool_calls(("first", {}), ("second", {}), ("first", {"x": 1})),
        answer("done"),
    )
    h = Harness(client, make_tool("first", first), make_tool("second", second))

    h.run()

    assert order == ["first", "second", "first"]
    results = h.tool_results()
    assert [r.tool_call_id for r in results] == ["call-0-first", "call-1-second", "call-2-first"]
    assert [r.result for r in results] == ["one", None, "one"]
    assert results[1].error == "ValueError: two failed"
    assert_finished(h)


def test_unknown_tool_gets_an_error_listing_the_tools() -> None:
    client = ScriptedClient(tool_calls(("summon_dragon", {})), answer("That tool does not exist."))
    h = Harness(client, make_tool("echo", lambda args, env: args), make_tool("transcribe_video", lambda a, e: {}))

    h.run()

    [result] = h.tool_results()
    assert result.name == "summon_dragon"
    assert result.error == "Unknown tool 'summon_dragon'. Available tools: echo, transcribe_video"
    assert_finished(h)


def test_unreadable_arguments_from_the_adapter_do_not_run_the_tool() -> None:
    ran: list[dict[str, Any]] = []
    call = ToolCall(id="c1", name="t", args={}, arguments_error="Expecting ',' delimiter: line 1 column 9")
    client = ScriptedClient(ChatResponse(tool_calls=[call]), answer("retrying"))
    h = Harness(client, make_tool("t", lambda args, env: ran.append(args)))
    h.run()
    [result] = h.tool_results()
    assert result.error == "Unreadable arguments for t: Expecting ',' delimiter: line 1 column 9"
    assert ran == []
    assert_finished(h)


# -- Tool Argument Validation scenarios ------------------------------------------------------------


def test_missing_required_argument() -> None:
    # transcribe_video declares no required parameter, so {} passes and the tool executes.
    executed: list[dict[str, Any]] = []
    real = build_tool_registry(["transcribe_video"]).get("transcribe_video")
    assert real is not None
    assert not any(p.required for p in real.parameters)

    def execute(args: dict[str, Any], env: ToolEnvironment) -> dict[str, bool]:
        executed.append(args)
        return {"ok": True}

    tool = dataclasses.replace(real, execute=dict_body(execute))
    h = Harness(ScriptedClient(tool_calls(("transcribe_video", {})), answer("ok")), tool)

    h.run()

    assert executed == [{}]
    assert h.tool_results()[0].error is None
    assert_finished(h)

    # A parameter that *is* required and missing stops the call, naming it.
    strict = make_tool(
        "strict", lambda args, env: executed.append(args), ToolParameter(key="assetId", type="string", required=True)
    )
    h = Harness(ScriptedClient(tool_calls(("strict", {})), answer("ok")), strict)
    h.run()
    [result] = h.tool_results()
    assert result.error is not None and "assetId" in result.error and "missing" in result.error
    assert executed == [{}]  # unchanged: the strict tool never ran
    assert_finished(h)


def test_wrong_argument_type() -> None:
    executed: list[dict[str, Any]] = []
    tool = make_tool(
        "transcribe_video",
        lambda args, env: executed.append(args),
        ToolParameter(key="assetId", type="string", required=True),
    )
    client = ScriptedClient(tool_calls(("transcribe_video", {"assetId": 123})), answer("Let me fix that."))
    h = Harness(client, tool)

    h.run()

    assert executed == []
    [result] = h.tool_results()
    assert result.error is not None
    assert "assetId" in result.error
    expected = "Invalid arguments for transcribe_video: argument 'assetId' must be a string, got integer 123"
    assert result.error == expected
    assert result.duration_ms is None
    assert h.chat.messages[-1].content == "Let me fix that."
    assert_finished(h)


def test_arguments_are_normalized_before_the_tool_runs() -> None:
    received: list[dict[str, Any]] = []
    tool = make_tool(
        "clip",
        lambda args, env: received.append(args),
        ToolParameter(key="count", type="integer", required=True),
        ToolParameter(key="language", type="string"),
    )
    client = ScriptedClient(tool_calls(("clip", {"count": 3.0, "language": None})), answer("ok"))
    h = Harness(client, tool)
    h.run()
    assert received == [{"count": 3}]
    assert isinstance(received[0]["count"], int)


# -- Max Iteration Guard scenarios -----------------------------------------------------------------


def test_cap_reached_mid_loop() -> None:
    calls: list[int] = []

    def counter(args: dict[str, Any], env: ToolEnvironment) -> int:
        calls.append(1)
        return len(calls)

    client = ScriptedClient(*[tool_calls(("count", {})) for _ in range(MAX_ITERATIONS)])
    h = Harness(client, make_tool("count", counter))

    messages = h.run()

    assert MAX_ITERATIONS == 8
    assert len(client.requests) == 8
    assert len(calls) == 8  # the eighth round's calls ran, so every call has its answer
    assert messages[-1].role == "assistant"
    assert messages[-1].content == ITERATION_LIMIT_MESSAGE == "Reached maximum iteration limit"
    assert [m.content for m in messages].count(ITERATION_LIMIT_MESSAGE) == 1
    assert len(messages) == 1 + 8 * 2 + 1
    assert h.chat.error is None
    assert_finished(h)


def test_loop_completes_within_cap() -> None:
    client = ScriptedClient(tool_calls(("count", {})), tool_calls(("count", {})), answer("Counted twice."))
    h = Harness(client, make_tool("count", lambda args, env: 1))

    messages = h.run()

    assert len(client.requests) == 3
    assert ITERATION_LIMIT_MESSAGE not in [m.content for m in messages]
    assert messages[-1].content == "Counted twice."
    assert_finished(h)


# -- API and network errors ------------------------------------------------------------------------


def test_network_error_keeps_the_user_message() -> None:
    client = ScriptedClient(httpx.ConnectError("connection refused to http://127.0.0.1:9/?key=secret"))
    h = Harness(client)

    h.run()

    assert h.chat.messages == [h.user]
    assert h.chat.error == "The assistant could not be reached (ConnectError)"
    assert "secret" not in h.chat.error
    assert_finished(h, status="error")
    assert ("status", "error", None) in h.listener.events


def test_api_error_after_a_tool_round_keeps_everything_appended() -> None:
    client = ScriptedClient(tool_calls(("count", {})), provider_failure(ErrorKind.PROVIDER_FAILED))
    h = Harness(client, make_tool("count", lambda args, env: 1))

    h.run()

    assert [m.role for m in h.chat.messages] == ["user", "assistant", "tool"]
    assert h.chat.error == "LLM provider error"
    assert_finished(h, status="error")

    # The next run starts clean: the old error is cleared, the history is sent as it was.
    h.client.replies.append(answer("Back again."))
    h.run()
    assert h.chat.error is None
    assert [m["role"] for m in h.client.requests[-1]["messages"]] == ["user", "assistant", "tool"]
    assert_finished(h)


def test_loading_is_true_exactly_while_running() -> None:
    seen: list[bool] = []
    h: Harness

    def observe(request: ChatRequest) -> ChatResponse:
        seen.append(h.chat.loading)
        return answer("hi")

    def tool(args: dict[str, Any], env: ToolEnvironment) -> None:
        seen.append(h.chat.loading)

    h = Harness(ScriptedClient(tool_calls(("t", {})), observe), make_tool("t", tool))
    assert h.chat.loading is False
    h.run()
    assert seen == [True, True]
    assert h.chat.loading is False

    failing = Harness(ScriptedClient(ChatError(ErrorKind.UNREACHABLE, "down")))
    failing.run()
    assert failing.chat.loading is False


# -- robustness ------------------------------------------------------------------------------------


def test_echo_context_enabled_returns_the_context() -> None:
    registry = build_tool_registry(["transcribe_video", "echo_context"])
    assert registry.names() == ["transcribe_video", "echo_context"]
    client = ScriptedClient(tool_calls(("echo_context", {})), answer("You are at 1.5 s."))
    h = Harness(client, registry=registry)
    context = AgentContext(project_id="p1", active_scene_id="s1", playback_time_ms=1500)

    h.orchestrator().run(context=context)

    [result] = h.tool_results()
    assert result.error is None
    assert result.result == {"context": context.to_wire()}
    assert client.requests[0]["context"]["playbackTimeMs"] == 1500
    assert_finished(h)


def test_listener_failures_do_not_wedge_the_stores() -> None:
    client = ScriptedClient(tool_calls(("t", {})), answer("fine"))
    h = Harness(client, make_tool("t", lambda args, env: env.report_progress(2.0, "overshoot")))
    h.listener.fail = True

    messages = h.run()

    assert messages[-1].content == "fine"
    assert ("progress", "t", 1.0, "overshoot") in h.listener.events
    assert_finished(h)


def test_result_that_is_not_json_is_a_tool_error() -> None:
    client = ScriptedClient(tool_calls(("bad", {}), ("nan", {}), ("model", {})), answer("ok"))
    h = Harness(
        client,
        make_tool("bad", lambda args, env: {"handle": threading.Lock()}),
        make_tool("nan", lambda args, env: {"value": math.nan}),
        make_tool("model", lambda args, env: MediaAsset(id="a", name="b.mp4")),
    )

    h.run()

    bad, nan, model = h.tool_results()
    assert bad.error is not None and bad.error.startswith("bad returned a result that is not JSON-serializable (")
    assert nan.error is not None and nan.error.startswith("nan returned a result that is not JSON-serializable")
    assert model.error is None
    assert model.result == {
        "id": "a",
        "name": "b.mp4",
        "kind": "video",
        "durationMs": None,
        "sizeBytes": None,
        "mimeType": None,
    }
    assert_finished(h)


def test_huge_result_becomes_an_error_asking_for_a_narrower_call() -> None:
    client = ScriptedClient(tool_calls(("big", {})), answer("ok"))
    h = Harness(client, make_tool("big", lambda args, env: "x" * 5000))

    h.run(max_result_chars=1000)

    [result] = h.tool_results()
    assert result.result is None
    assert result.error == (
        "big returned 5,002 characters of JSON, more than the 1,000 that can be sent to the model; "
        "call it again with narrower arguments"
    )
    assert len(client.requests[1]["messages"][2]["toolResult"]["error"]) < 300
    assert_finished(h)


def test_a_second_run_while_running_is_refused() -> None:
    h: Harness
    refused: list[str] = []

    def reenter(args: dict[str, Any], env: ToolEnvironment) -> None:
        with pytest.raises(OrchestratorBusyError) as info:
            orchestrator.run()
        refused.append(str(info.value))

    h = Harness(ScriptedClient(tool_calls(("reenter", {})), answer("ok")), make_tool("reenter", reenter))
    orchestrator = h.orchestrator()
    orchestrator.run()

    assert refused == ["The assistant is still working on the previous message"]
    assert [r.error for r in h.tool_results()] == [None]
    assert_finished(h)


class Interrupt(BaseException):
    """Stands in for Streamlit's RerunException/StopException, which derive from BaseException."""


def test_interrupted_run_leaves_no_busy_state_and_no_unanswered_call() -> None:
    def interrupted(args: dict[str, Any], env: ToolEnvironment) -> None:
        raise Interrupt

    h = Harness(ScriptedClient(tool_calls(("slow", {}), ("slow", {"again": True}))), make_tool("slow", interrupted))
    orchestrator = h.orchestrator()
    with pytest.raises(Interrupt):
        orchestrator.run()

    assert h.chat.loading is False
    assert h.agent.status == "idle"
    assert h.agent.active_tool is None
    # Both calls are answered, so the stored history stays acceptable to every provider.
    assert_history_consistent(h.chat.messages)
    assert [r.error for r in h.tool_results()] == ["Not run: the run was interrupted before this call finished"] * 2
    # The orchestrator is usable again.
    h.client.replies.append(answer("hi"))
    orchestrator.run()
    assert h.chat.messages[-1].content == "hi"
    assert_finished(h)


def test_interrupt_in_the_listener_still_answers_every_call() -> None:
    class InterruptingListener(RecordingListener):
        def on_message(self, message: ChatMessage) -> None:
            if message.tool_calls:
                raise Interrupt

    ran: list[int] = []
    h = Harness(ScriptedClient(tool_calls(("t", {}), ("t", {}))), make_tool("t", lambda args, env: ran.append(1)))
    with pytest.raises(Interrupt):
        h.run(listener=InterruptingListener())

    assert ran == []
    assert_history_consistent(h.chat.messages)
    assert len(h.tool_results()) == 2
    assert (h.chat.loading, h.agent.status) == (False, "idle")


def test_storage_failing_mid_round_answers_the_remaining_calls() -> None:
    class FailsOnToolMessages:
        def message_added(self, message: ChatMessage) -> None:
            if message.role == "tool":
                raise OSError("database is locked")

        def messages_cleared(self) -> None:
            """Nothing to clear."""

    ran: list[int] = []
    client = ScriptedClient(tool_calls(("t", {}), ("t", {}), ("t", {})))
    h = Harness(client, make_tool("t", lambda args, env: ran.append(1)))
    h.chat.set_persistence(FailsOnToolMessages())

    h.run()

    assert ran == [1]  # the first call ran; its message reached the session, not the disk
    assert_history_consistent(h.chat.messages)
    errors = [r.error for r in h.tool_results()]
    assert errors[0] is None
    assert errors[1:] == ["Not run: the run stopped (OSError: database is locked)"] * 2
    assert h.chat.error == "Internal error: OSError: database is locked"
    assert_finished(h, status="error")


def test_failing_persistence_ends_the_run_in_the_error_state() -> None:
    class BrokenDisk:
        def message_added(self, message: ChatMessage) -> None:
            raise OSError("database is locked")

        def messages_cleared(self) -> None:
            """Nothing to clear."""

    h = Harness(ScriptedClient(answer("Hello!")))
    h.chat.set_persistence(BrokenDisk())

    h.run()

    assert h.chat.error == "Internal error: OSError: database is locked"
    assert [m.content for m in h.chat.messages] == ["Hello", "Hello!"]  # kept in the session
    assert_finished(h, status="error")


def test_explicit_messages_and_context_override_the_stores() -> None:
    client = ScriptedClient(answer("ok"))
    h = Harness(client)
    h.agent.set_context(AgentContext(project_id="stored"))
    other = ChatMessage(role="user", content="from storage")

    h.orchestrator().run(messages=[other], context=AgentContext(project_id="given"))

    assert [m["content"] for m in client.requests[0]["messages"]] == ["from storage"]
    assert client.requests[0]["context"]["projectId"] == "given"
    assert h.chat.messages[-1].content == "ok"


def test_max_iterations_must_be_positive() -> None:
    h = Harness(ScriptedClient())
    with pytest.raises(ValueError, match="max_iterations"):
        h.orchestrator(max_iterations=0)
