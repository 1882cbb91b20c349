"""The job of a run: the orchestrator answering the conversation, recording what happens as it happens.

It reads everything it needs from storage (the history, the conversation's project) and from the run
(the workspace context of the submission), so the same job runs wherever a worker picks the run up.
The orchestrator's stores are its own (a plain ``dict``, written through to storage as today); the
page's stores in ``st.session_state`` are the page's view, refreshed from storage and the run's events.
"""

from __future__ import annotations

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


class RunRecorder:
    """An :class:`~agent_app.orchestrator_options.OrchestratorListener` writing each change as a run event."""

    def __init__(self, control: RunControl) -> None:
        self._control = control

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        self._control.emit(StatusEvent(status=status, active_tool=active_tool))

    def on_message(self, message: ChatMessage) -> None:
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
        self._control.emit(ToolProgressEvent(tool_call_id=call.id, name=call.name, fraction=fraction, message=message))

    def on_text(self, delta: str) -> None:
        self._control.emit(TextEvent(delta=delta))


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
    orchestrator = Orchestrator(
        tools.client,
        tools.registry,
        chat,
        agent,
        OrchestratorOptions(
            media=ProjectMediaLibrary(storage, conversation.project_id),
            data_dir=storage.data_dir,
            settings=tools.settings,
            listener=RunRecorder(control),
            cancellation=control.cancellation,
        ),
    )
    orchestrator.run(history)  # the loaded messages themselves: the store would parse its copy again
    unsaved_ids = set(chat.unsaved)
    unsaved = tuple(m for m in chat.messages if m.id in unsaved_ids)
    if orchestrator.stopped:
        return RunEnd("stopped", unsaved=unsaved)
    if chat.error is not None:
        return RunEnd("error", chat.error, chat.error_kind, unsaved)
    return RunEnd("answered", unsaved=unsaved)
