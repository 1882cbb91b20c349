"""One tool call, from the model's request to the result that answers it.

Why a module of its own: the loop (:mod:`agent_app.orchestrator`) decides *when* calls run and what the
history records; this module decides what running one call means: finding the tool, validating its
arguments once, running it, and turning whatever it returned or raised into a result the model can be
sent. A tool failing is part of the conversation, never the run's failure: every failure here becomes the
result's ``error``, so the model can recover.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from agent_app.clock import elapsed_text
from agent_app.invisible_chars import escape_invisible
from agent_app.prompt import escape_invisible_in
from agent_app.registry import ToolRegistry
from agent_app.tool_args import ToolArgs
from agent_app.types import (
    ChatMessage,
    StopRequested,
    ToolCall,
    ToolDefinition,
    ToolEnvironment,
    ToolResult,
    history_call_ids,
    synthesize_call_id,
)
from agent_app.validation import (
    MAX_JSON_DEPTH,
    ToolArgumentsError,
    describe_unknown_tool,
    json_depth_exceeds,
    parse_tool_args,
)

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS = 100_000
"""Largest tool result (as JSON text) sent back to the model: about 25k tokens. A bigger one would
crowd the model's context window and every later request of the run; the tool gets an error that
asks for a narrower call instead (``transcribe_video`` can take a ``startMs``/``endMs`` range)."""

SUMMARY_CHARS = 200
"""Longest error text quoted in a tool message's human-readable ``content``."""

STOPPED_TOOL_ERROR = "Stopped by the user while it ran"


class UnsendableResultError(ValueError):
    """A tool's result cannot be sent to the model (not JSON, or too large); the text says why."""


@dataclass(frozen=True)
class ReadyCall:
    """A call whose tool exists and whose arguments validated: ready to run."""

    call: ToolCall
    tool: ToolDefinition[Any]
    arguments: ToolArgs


def prepare_call(call: ToolCall, registry: ToolRegistry) -> ReadyCall | ToolResult:
    """The call ready to run, or the result that answers it without running (unknown tool, bad arguments)."""
    tool = registry.get(call.name)
    if tool is None:
        return ToolResult(
            tool_call_id=call.id, name=call.name, error=describe_unknown_tool(call.name, registry.names())
        )
    if call.arguments_error is not None:
        # The adapter could not read the provider's arguments: running with ``{}`` would guess.
        problem = f"Unreadable arguments for {call.name}: {call.arguments_error}"
        return ToolResult(tool_call_id=call.id, name=call.name, error=problem)
    try:
        arguments = parse_tool_args(tool, call.args)
    except ToolArgumentsError as exc:
        return ToolResult(tool_call_id=call.id, name=call.name, error=str(exc))
    return ReadyCall(call, tool, arguments)


def run_call(ready: ReadyCall, environment: ToolEnvironment, max_result_chars: int = MAX_RESULT_CHARS) -> ToolResult:
    """Run the tool and time it; what it returned as sendable data, or why it failed as the ``error``."""
    call = ready.call
    started = time.perf_counter()
    result: object = None
    error: str | None = None
    try:
        result = sendable(call.name, ready.tool.execute(ready.arguments, environment), max_result_chars)
    except UnsendableResultError as exc:
        error = str(exc)
    except StopRequested:
        error = STOPPED_TOOL_ERROR
    except Exception as exc:
        logger.info("Tool %s failed", call.name, exc_info=True)
        error = STOPPED_TOOL_ERROR if environment.cancellation.is_set() else describe_exception(exc)
    duration_ms = round((time.perf_counter() - started) * 1000)
    return ToolResult(tool_call_id=call.id, name=call.name, result=result, error=error, duration_ms=duration_ms)


def sendable(name: str, raw: object, max_chars: int = MAX_RESULT_CHARS) -> object:
    """``raw`` as plain JSON data (models, dataclasses, paths... converted), or a clear error.

    Checked here, not when the next request fails, so the failure is the tool's and the loop
    can go on.
    """
    try:
        data = to_jsonable_python(raw)
        text = json.dumps(data, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise UnsendableResultError(f"{name} returned a result that is not JSON-serializable ({exc})") from None
    if json_depth_exceeds(data):
        raise UnsendableResultError(
            f"{name} returned data nested more than {MAX_JSON_DEPTH} levels deep, which cannot be sent to the model"
        )
    if len(text) > max_chars:
        raise UnsendableResultError(
            f"{name} returned {len(text):,} characters of JSON, more than the {max_chars:,} "
            "that can be sent to the model; call it again with narrower arguments"
        )
    return data


def over_cap_result(call: ToolCall, cap: int, asked: int) -> ToolResult:
    """The answer to a call beyond the per-turn cap: not run, and the model told how to get it."""
    return ToolResult(
        tool_call_id=call.id,
        name=call.name,
        error=f"Not run: at most {cap} tool calls run per turn and {asked} were asked "
        "for; call again for the ones you still need",
    )


def unique_call_ids(calls: Sequence[ToolCall], history: Sequence[ChatMessage]) -> list[ToolCall]:
    """``calls`` with a fresh id for any that repeats an earlier call's (in the turn or the history).

    The adapters already ensure this; a client of another kind may not, and a stored history with a
    repeated id is refused by the route (and matched wrongly by the page) for the rest of the conversation.
    """
    seen = history_call_ids(history)
    unique: list[ToolCall] = []
    for call in calls:
        kept = call.model_copy(update={"id": synthesize_call_id()}) if call.id in seen else call
        seen.add(kept.id)
        unique.append(kept)
    return unique


def tool_message(result: ToolResult) -> ChatMessage:
    """The history's tool message answering a call: the result as the model reads it, and a summary."""
    result = as_model_data(result)
    return ChatMessage(role="tool", content=summarize(result), tool_result=result)


def as_model_data(result: ToolResult) -> ToolResult:
    """``result`` with invisible and direction-changing characters escaped in every string: a transcript
    or a file name reaches the model as the characters it holds, never text that reads in another order
    (the system prompt tells the model that tool results are data, not instructions). ``result`` itself when
    nothing needs escaping (it is frozen)."""
    data = escape_invisible_in(result.result)
    error = None if result.error is None else escape_invisible(result.error)
    if data is result.result and error is result.error:
        return result
    return result.model_copy(update={"result": data, "error": error})


def describe_exception(exc: BaseException) -> str:
    """``"Type: message"``: what a user or the model needs, without a traceback."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def summarize(result: ToolResult) -> str:
    """The short human-readable ``content`` of a tool message (the data is in ``tool_result``)."""
    if result.error is not None:
        error = result.error if len(result.error) <= SUMMARY_CHARS else result.error[: SUMMARY_CHARS - 3] + "..."
        return f"{result.name} failed: {error}"
    if result.duration_ms is None:
        return f"{result.name} finished"
    return f"{result.name} finished in {elapsed_text(result.duration_ms)}"
