"""A run on the server end to end: the run manager's executor, the orchestrator, the in-process route
client, the real SDKs against the fake LLM server, storage on both backends (ids ``sqlite`` and ``postgres``).
Stop during a model call and during a tool, on both providers, then a next question with the history the
model receives checked."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_app.orchestrator import NOT_RUN_STOPPED
from agent_app.registry import ToolRegistry
from agent_app.runs.events import TextEvent, ToolCallEvent, ToolProgressEvent, ToolResultEvent, UsageEvent
from agent_app.runs.manager import ThreadRunManager
from agent_app.runs.models import Run
from agent_app.runs.turn import TEXT_WRITE_SECONDS
from agent_app.storage import SqliteStorage
from agent_app.tool_args import ToolArgs
from agent_app.tool_calls import STOPPED_TOOL_ERROR
from agent_app.types import AgentContext, ChatMessage, ToolDefinition, ToolEnvironment
from fake_llm import (
    FakeLLMServer,
    delayed,
    error_reply,
    gemini_call,
    gemini_function_calls,
    gemini_text,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
)
from fake_llm.streams import StreamScript
from tests.run_support import finished, manager_for, wait_until
from tests.storage_backends import BACKENDS, Backend, backend_for

WAIT = 20.0


class NoArgs(ToolArgs):
    """``count_slowly`` takes no arguments."""


def counting_tool(started: threading.Event) -> ToolDefinition[NoArgs]:
    """A long tool that reports progress every 10 ms for up to 20 s (as the transcription does per chunk)."""

    def execute(args: NoArgs, env: ToolEnvironment) -> dict[str, Any]:
        started.set()
        for step in range(2000):
            env.report_progress(step / 2000, f"step {step}")
            time.sleep(0.01)
        return {"counted": 2000}

    return ToolDefinition(name="count_slowly", description="Counts slowly.", arguments=NoArgs, execute=execute)


def ask(manager: ThreadRunManager, chat: str, text: str) -> Run:
    context = AgentContext(project_id="p")
    return manager.start(chat, context, ChatMessage(role="user", content=text))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def new_chat(storage: SqliteStorage) -> str:
    return storage.create_conversation(storage.create_project("p").id).id


def test_a_run_answers_and_records_what_happened(storage: SqliteStorage, openai_llm: FakeLLMServer) -> None:
    manager = manager_for(storage, ToolRegistry())
    openai_llm.chat.push(openai_text("Hello from the server."))
    chat = new_chat(storage)
    run = finished(manager, ask(manager, chat, "Hi"), WAIT)
    assert run.state == "answered" and run.error is None
    assert [(m.role, m.content) for m in storage.load_messages(chat)] == [
        ("user", "Hi"),
        ("assistant", "Hello from the server."),
    ]
    wait_until(lambda: manager.events(run.id)[-1].kind == "end", WAIT)  # written just after the run's state
    events = manager.events(run.id)
    assert "".join(e.data.delta for e in events if isinstance(e.data, TextEvent)) == "Hello from the server."
    assert [e.kind for e in events].index("text") < [e.kind for e in events].index("message")
    [usage] = [e.data for e in events if isinstance(e.data, UsageEvent)]
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    kinds = [
        (e.kind, getattr(e.data, "status", None) or getattr(e.data, "role", None) or getattr(e.data, "state", None))
        for e in events
        if e.kind not in ("text", "usage")
    ]
    assert kinds == [
        ("status", "sending"),
        ("status", "responding"),
        ("message", "assistant"),
        ("status", "idle"),
        ("end", "answered"),
    ]


def test_streamed_text_is_written_in_batches_not_per_delta(storage: SqliteStorage, openai_llm: FakeLLMServer) -> None:
    """Forty deltas over most of a second become a few text events, each batch written at least
    TEXT_WRITE_SECONDS after the one before (whatever the machine's speed, a slower one only makes fewer)."""
    manager = manager_for(storage, ToolRegistry())
    answer = "".join(f"word{n} " for n in range(40))
    openai_llm.chat.push(streamed(openai_text(answer), StreamScript(pieces=40, delay_seconds=0.02)))
    run = finished(manager, ask(manager, new_chat(storage), "Hi"), WAIT)
    wait_until(lambda: manager.events(run.id)[-1].kind == "end", WAIT)
    texts = [e for e in manager.events(run.id) if isinstance(e.data, TextEvent)]
    assert "".join(e.data.delta for e in texts if isinstance(e.data, TextEvent)) == answer
    assert 2 <= len(texts) < 40
    gaps = [later.created_at - earlier.created_at for earlier, later in itertools.pairwise(texts[:-1])]
    assert all(gap >= TEXT_WRITE_SECONDS * 1000 - 2 for gap in gaps), gaps


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_run_after_a_run_reuses_the_workers_connection_to_the_provider(
    storage: SqliteStorage, request: pytest.FixtureRequest, provider: str
) -> None:
    """The worker keeps its event loop between runs, and with it the SDK client and its open connection: no
    new connection (a TLS handshake, with a real provider) per run."""
    llm: FakeLLMServer = request.getfixturevalue(f"{provider}_llm")
    manager = manager_for(storage, ToolRegistry(), max_workers=1)
    chat = new_chat(storage)
    for question in ("First question", "Second question"):
        assert finished(manager, ask(manager, chat, question), WAIT).state == "answered"
    ports = [recorded.client_port for recorded in llm.requests]
    assert len(ports) == 2 and ports[0] == ports[1] != 0


def test_a_provider_failure_ends_the_run_in_error_keeping_the_question(
    storage: SqliteStorage, openai_llm: FakeLLMServer
) -> None:
    manager = manager_for(storage, ToolRegistry())
    openai_llm.chat.push(error_reply(500))
    chat = new_chat(storage)
    run = finished(manager, ask(manager, chat, "Hi"), WAIT)
    assert run.state == "error" and run.error == "LLM provider error"
    assert [m.role for m in storage.load_messages(chat)] == ["user"]


def _stop_during_tool(storage: SqliteStorage, llm: FakeLLMServer, provider: str) -> list[Any]:
    """Ask, let the model call the slow tool, press Stop while it runs, ask again; the second request's history."""
    started = threading.Event()
    registry = ToolRegistry()
    registry.register_tool(counting_tool(started))
    manager = manager_for(storage, registry)
    if provider == "openai":
        llm.chat.push(
            openai_tool_calls(tool_call("count_slowly", {}, id="call_a"), tool_call("count_slowly", {}, id="call_b"))
        )
        llm.chat.push(openai_text("Fresh answer."))
    else:
        llm.gemini.push(gemini_function_calls(gemini_call("count_slowly", {}), gemini_call("count_slowly", {})))
        llm.gemini.push(gemini_text("Fresh answer."))
    chat = new_chat(storage)
    run = ask(manager, chat, "Count for me")
    assert started.wait(WAIT)
    pressed = time.monotonic()
    assert manager.stop(run.id)
    ended = finished(manager, run, WAIT)
    assert time.monotonic() - pressed < 1.0  # the tool stopped at its next progress report
    assert ended.state == "stopped"
    stored = storage.load_messages(chat)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool"]
    errors = [m.tool_result.error for m in stored if m.tool_result is not None]
    assert errors == [STOPPED_TOOL_ERROR, NOT_RUN_STOPPED]
    requests = llm.chat.requests if provider == "openai" else llm.gemini.requests
    assert len(requests) == 1  # the stopped results were not sent on
    events = [e.data for e in manager.events(run.id)]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [c.name for c in calls] == ["count_slowly", "count_slowly"]
    answered = [(e.tool_call_id, e.error) for e in events if isinstance(e, ToolResultEvent)]
    assert answered == [(calls[0].id, STOPPED_TOOL_ERROR), (calls[1].id, NOT_RUN_STOPPED)]
    assert any(isinstance(e, ToolProgressEvent) and e.tool_call_id == calls[0].id for e in events)

    second = finished(manager, ask(manager, chat, "Something else"), WAIT)
    assert second.state == "answered"
    assert [m.content for m in storage.load_messages(chat)][-1] == "Fresh answer."
    sent = requests[-1].json
    assert sent is not None
    return list(sent["messages"] if provider == "openai" else sent["contents"])


def test_stop_during_a_tool_then_a_normal_next_question_openai(
    storage: SqliteStorage, openai_llm: FakeLLMServer
) -> None:
    sent = _stop_during_tool(storage, openai_llm, "openai")
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [m.get("tool_call_id") for m in sent[3:5]] == ["call_a", "call_b"]
    assert STOPPED_TOOL_ERROR in sent[3]["content"] and NOT_RUN_STOPPED in sent[4]["content"]
    assert sent[-1]["content"] == "Something else"


def test_stop_during_a_tool_then_a_normal_next_question_gemini(
    storage: SqliteStorage, gemini_llm: FakeLLMServer
) -> None:
    sent = _stop_during_tool(storage, gemini_llm, "gemini")
    roles = [content["role"] for content in sent]
    assert roles[:2] == ["user", "model"]
    responses = [part["functionResponse"] for c in sent for part in c["parts"] if "functionResponse" in part]
    assert [r["name"] for r in responses] == ["count_slowly", "count_slowly"]
    assert STOPPED_TOOL_ERROR in str(responses[0]) and NOT_RUN_STOPPED in str(responses[1])
    assert sent[-1]["parts"][-1] == {"text": "Something else"}


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_stop_while_the_model_answers_then_a_normal_next_question(
    storage: SqliteStorage, request: pytest.FixtureRequest, provider: str
) -> None:
    llm: FakeLLMServer = request.getfixturevalue(f"{provider}_llm")
    manager = manager_for(storage, ToolRegistry())
    script = llm.chat if provider == "openai" else llm.gemini
    slow = openai_text("Too late.") if provider == "openai" else gemini_text("Too late.")
    fresh = openai_text("Fresh answer.") if provider == "openai" else gemini_text("Fresh answer.")
    script.push(delayed(slow, 0.5), fresh)
    chat = new_chat(storage)
    run = ask(manager, chat, "Ramble on")
    wait_until(lambda: script.requests, WAIT, "the model was never asked")
    manager.stop(run.id)
    assert finished(manager, run, WAIT).state == "stopped"
    assert [m.role for m in storage.load_messages(chat)] == ["user"]  # nothing had streamed: nothing kept
    assert finished(manager, ask(manager, chat, "Short answer please"), WAIT).state == "answered"
    sent = script.last.json
    assert sent is not None
    if provider == "openai":
        assert [(m["role"], m["content"]) for m in sent["messages"][1:]] == [
            ("user", "Ramble on"),
            ("user", "Short answer please"),
        ]
    else:
        texts = [part.get("text") for content in sent["contents"] for part in content["parts"]]
        assert texts == ["Ramble on", "Short answer please"]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_stop_during_streaming_keeps_the_text_so_far_then_a_normal_next_question(
    storage: SqliteStorage, request: pytest.FixtureRequest, provider: str
) -> None:
    llm: FakeLLMServer = request.getfixturevalue(f"{provider}_llm")
    manager = manager_for(storage, ToolRegistry())
    script = llm.chat if provider == "openai" else llm.gemini
    words = " ".join(f"w{index}" for index in range(40))
    long = openai_text(words) if provider == "openai" else gemini_text(words)
    script.push(streamed(long, StreamScript(pieces=40, delay_seconds=0.2)))
    script.push(openai_text("Fresh answer.") if provider == "openai" else gemini_text("Fresh answer."))
    chat = new_chat(storage)
    run = ask(manager, chat, "Ramble on")
    wait_until(lambda: sum(e.kind == "text" for e in manager.events(run.id)) >= 3, WAIT, "the text never streamed")
    pressed = time.monotonic()
    manager.stop(run.id)
    assert finished(manager, run, WAIT).state == "stopped"
    assert time.monotonic() - pressed < 1.5  # 40 pieces would take 8 s: the stream was closed
    assert script.last.answered.wait(2) and script.last.closed_by_client
    streamed_text = "".join(e.data.delta for e in manager.events(run.id) if isinstance(e.data, TextEvent))
    stored = storage.load_messages(chat)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].stopped and stored[1].content == streamed_text
    assert words.startswith(streamed_text) and 0 < len(streamed_text) < len(words)

    assert finished(manager, ask(manager, chat, "Short answer please"), WAIT).state == "answered"
    sent = script.last.json
    assert sent is not None
    if provider == "openai":
        assert [(m["role"], m["content"]) for m in sent["messages"][1:]] == [
            ("user", "Ramble on"),
            ("assistant", streamed_text),
            ("user", "Short answer please"),
        ]
    else:
        assert [(c["role"], c["parts"][0]["text"]) for c in sent["contents"]] == [
            ("user", "Ramble on"),
            ("model", streamed_text),
            ("user", "Short answer please"),
        ]
