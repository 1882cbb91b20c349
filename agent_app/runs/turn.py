"""The job of a run: the orchestrator answering the conversation, recording what happens as it happens.

It reads everything it needs from storage (the history, the conversation's project) and from the run
(the workspace context of the submission), so the same job runs wherever a worker picks the run up.
The orchestrator's stores are its own (a plain ``dict``, written through to storage as today); the
page's stores in ``st.session_state`` are the page's view, refreshed from storage and the run's events.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent_app.orchestrator import Orchestrator
from agent_app.orchestrator_options import OrchestratorOptions
from agent_app.registry import ToolRegistry
from agent_app.runs.events import (
    MessageEvent,
    StatusEvent,
    TextEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent_app.runs.execution import RunControl, RunEnd
from agent_app.runs.models import Run
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.settings import Settings
from agent_app.storage import ProjectMediaLibrary, Storage
from agent_app.types import ChatClient, ChatMessage, ExecutionState, ToolCall


@dataclass(frozen=True)
class Assistant:
    """What a run needs besides storage: the chat client, the enabled tools and the settings read when the
    run started (its tools get them)."""

    client: ChatClient
    registry: ToolRegistry
    settings: Settings


TEXT_WRITE_SECONDS = 0.15
"""How long streamed text gathers before it is written as one event: a handful of writes a second, not one
per token, and a watching page still gets new text well within a quarter of a second."""


class TextCoalescer:
    """Text deltas gathered into one :class:`TextEvent` per :data:`TEXT_WRITE_SECONDS`.

    The first delta of a batch schedules its write on the provider's event loop (the run's thread, between
    two reads of the stream), so text that stops arriving is still written in time; a later delta past the
    interval writes at once. :meth:`flush` writes what is gathered (before any other event, at the end)."""

    def __init__(self, write: Callable[[str], None], interval: float = TEXT_WRITE_SECONDS) -> None:
        self._write = write
        self._interval = interval
        self._parts: list[str] = []
        self._since = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def add(self, delta: str) -> None:
        self._parts.append(delta)
        if len(self._parts) > 1:
            if time.monotonic() - self._since >= self._interval:
                self.flush()
            return
        self._since = time.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop: the next delta or event writes it
            return
        self._timer = loop.call_later(self._interval, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._parts:
            text = "".join(self._parts)
            self._parts.clear()
            self._write(text)


class RunRecorder:
    """An :class:`~agent_app.orchestrator_options.OrchestratorListener` writing each change as a run event
    (text coalesced, see :class:`TextCoalescer`; everything else as it happens, after the text before it)."""

    def __init__(self, control: RunControl) -> None:
        self._control = control
        self._text = TextCoalescer(lambda text: control.emit(TextEvent(delta=text)))

    def flush(self) -> None:
        """Write the text gathered so far."""
        self._text.flush()

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        self._text.flush()
        self._control.emit(StatusEvent(status=status, active_tool=active_tool))

    def on_message(self, message: ChatMessage) -> None:
        self._text.flush()
        result = message.tool_result
        self._control.emit(
            MessageEvent(id=message.id, role=message.role, tool_call_id=None if result is None else result.tool_call_id)
        )
        for call in message.tool_calls or []:
            self._control.emit(ToolCallEvent.of(call))
        if result is not None:
            self._control.emit(ToolResultEvent(tool_call_id=result.tool_call_id, name=result.name, error=result.error))
        if message.usage is not None:  # the tokens of the request that produced this answer
            self._control.emit(UsageEvent.of(message.usage))

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        self._text.flush()
        self._control.emit(ToolProgressEvent(tool_call_id=call.id, name=call.name, fraction=fraction, message=message))

    def on_text(self, delta: str) -> None:
        self._text.add(delta)


def run_turn(storage: Storage, assistant: Callable[[], Assistant], run: Run, control: RunControl) -> RunEnd:
    """Answer the conversation of ``run`` with its stored history; how the run ended."""
    conversation = storage.get_conversation(run.conversation_id)
    if conversation is None:
        return RunEnd("error", "The conversation no longer exists")
    history = storage.load_messages(conversation.id)
    if history and history[-1].role == "assistant" and not history[-1].tool_calls:
        # Already answered: an answer an earlier run could not store, written by this run's start. The
        # model is not asked again (two answers in a row otherwise).
        return RunEnd("answered")
    tools = assistant()
    state: dict[str, object] = {}
    chat = ChatStore(state, persistence=control.persistence())  # fenced: nothing once the lease is lost
    chat.load_messages(history)
    agent = AgentStore(state)
    agent.set_context(run.context)
    recorder = RunRecorder(control)
    orchestrator = Orchestrator(
        tools.client,
        tools.registry,
        chat,
        agent,
        OrchestratorOptions(
            media=ProjectMediaLibrary(storage, conversation.project_id),
            data_dir=storage.data_dir,
            settings=tools.settings,
            listener=recorder,
            cancellation=control.cancellation,
        ),
    )
    try:
        orchestrator.run(history)  # the loaded messages themselves: the store would parse its copy again
    finally:
        recorder.flush()
    unsaved_ids = set(chat.unsaved)
    unsaved = tuple(m for m in chat.messages if m.id in unsaved_ids)
    if orchestrator.stopped:
        return RunEnd("stopped", unsaved=unsaved)
    if chat.error is not None:
        return RunEnd("error", chat.error, chat.error_kind, unsaved)
    return RunEnd("answered", unsaved=unsaved)
