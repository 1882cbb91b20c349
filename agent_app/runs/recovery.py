"""Recovering a conversation whose last run did not finish.

A run ends early when its server stops (or is killed) while the orchestrator is working. Whatever was
appended stays stored, which can leave an assistant message whose tool calls never got results; every
provider rejects such a history, so the conversation would fail forever. Before the next run those calls
are answered with an "interrupted" error (the model then explains or calls again), and the page offers
Retry for a question left without an answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_app.runs.models import Run, RunState
from agent_app.session_stores import ChatStore
from agent_app.types import ChatMessage, ToolCall, ToolResult

INTERRUPTED_ERROR = "Interrupted: the run stopped before this call finished"


def unfinished_calls(messages: Sequence[ChatMessage]) -> list[ToolCall]:
    """Tool calls of the conversation that have no result message."""
    answered = {m.tool_result.tool_call_id for m in messages if m.role == "tool" and m.tool_result is not None}
    return [call for m in messages if m.role == "assistant" for call in m.tool_calls or [] if call.id not in answered]


def closing_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """A tool message answering each unfinished call of ``messages`` with :data:`INTERRUPTED_ERROR`."""
    return [
        ChatMessage(
            role="tool",
            content=f"{call.name} was interrupted",
            tool_result=ToolResult(tool_call_id=call.id, name=call.name, error=INTERRUPTED_ERROR),
        )
        for call in unfinished_calls(messages)
    ]


def close_unfinished_calls(chat: ChatStore) -> int:
    """Answer every unfinished call of ``chat`` with :data:`INTERRUPTED_ERROR`; return how many there were."""
    closing = closing_messages(chat.messages)
    for message in closing:
        chat.add_message(message)
    return len(closing)


def is_unanswered(messages: Sequence[ChatMessage]) -> bool:
    """Whether the conversation ends waiting for the assistant (a question or tool work, no final answer)."""
    if not messages:
        return False
    last = messages[-1]
    return last.role in ("user", "tool") or (last.role == "assistant" and bool(last.tool_calls))


def settled_state(run: Run, last: ChatMessage | None) -> RunState:
    """How ``run`` ended, judged also by the conversation's last stored message ``last``.

    A process stopped between writing the answer and recording the run's end leaves an interrupted run
    whose answer is complete and stored: that run answered (``stopped``, for an answer the user stopped),
    and saying "interrupted" with Retry would offer to ask the model for a second answer."""
    if run.state == "interrupted" and last is not None and last.role == "assistant" and not last.tool_calls:
        return "stopped" if last.stopped else "answered"
    return run.state
