"""The agent loop: send the history, run the tools the model asks for, feed the results back, stop.

One :meth:`Orchestrator.run` is one user turn. It talks to the model only through a
:class:`~agent_app.types.ChatClient` (never an SDK), to tools only through the
:class:`~agent_app.registry.ToolRegistry`, and to its watchers only through the stores and an optional
:class:`OrchestratorListener`, so the same loop runs as a server run (:mod:`agent_app.runs.turn`, whose
listener records run events), behind an HTTP client and in tests.

The failure rules, which the spec draws between two kinds of error:

* A *tool* failing (it raises, its arguments are invalid, it does not exist, its result cannot be
  sent) is part of the conversation: it becomes a ``ToolResult.error`` and the loop goes on, so the
  model can recover.
* The *model* being unreachable (``ChatError`` or any exception from the client) ends the run: the
  chat store's ``error`` and its kind are set, status ``error``; nothing appended so far is removed.

Everything appended goes to both the local history (what the next request sends) and the chat
store (what the page shows and storage keeps), in the same order.

Bounds: :data:`MAX_ITERATIONS` round trips, :data:`MAX_CALLS_PER_ROUND` calls run per model turn,
:data:`MAX_RESULT_CHARS` of JSON per result. There is deliberately no per-tool timeout: a Python thread
cannot be stopped, so a "timed out" tool would go on transcribing in the background while the model is
told it failed, and a long video legitimately takes minutes; a stuck run is ended by the user's Stop
(``should_stop``): the model's stream is closed at once, a tool that reports progress stops at its next
report, and every open call is answered (see :meth:`Orchestrator._tool_round`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic_core import PydanticSerializationError, to_jsonable_python

from agent_app.clock import elapsed_text
from agent_app.errors import ChatError, ErrorKind
from agent_app.invisible_chars import escape_invisible
from agent_app.prompt import escape_invisible_in
from agent_app.registry import ToolRegistry
from agent_app.stores import AgentStore, ChatStore
from agent_app.types import (
    AgentContext,
    ChatClient,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ExecutionState,
    MediaLibrary,
    StopRequested,
    ToolCall,
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

MAX_ITERATIONS = 8
"""The spec's hard cap on provider round trips in one run."""

ITERATION_LIMIT_MESSAGE = "Reached maximum iteration limit"
"""The assistant message appended when the cap stops a run."""

MAX_RESULT_CHARS = 100_000
"""Largest tool result (as JSON text) sent back to the model: about 25k tokens. A bigger one would
crowd the model's context window and every later request of the run; the tool gets an error that
asks for a narrower call instead (``transcribe_video`` can take a ``startMs``/``endMs`` range)."""

MAX_CALLS_PER_ROUND = 10
"""Tool calls run per model turn; the rest of a bigger turn are answered with an error without running.
The iteration cap bounds round trips, not calls: a model asking for 50 transcriptions at once would keep
the user waiting for minutes. Every call still gets an answer (providers require one per call), and the
model can ask again for what it still needs."""

SUMMARY_CHARS = 200
"""Longest error text quoted in a tool message's human-readable ``content``."""

STOPPED_TOOL_ERROR = "Stopped by the user while it ran"
NOT_RUN_STOPPED = "Not run: the user pressed Stop before this call ran"


class UnsendableResultError(ValueError):
    """A tool's result cannot be sent to the model (not JSON, or too large); the text says why."""


class _StopSignal:
    """The client's cancel signal: set once the user pressed Stop (the stream is closed at once)."""

    def __init__(self, should_stop: Callable[[], bool]) -> None:
        self._should_stop = should_stop

    def is_set(self) -> bool:
        return self._should_stop()


class OrchestratorBusyError(RuntimeError):
    """:meth:`Orchestrator.run` was called while a run of the same orchestrator is in progress."""


class OrchestratorListener(Protocol):
    """What a run records as events (the page draws them live). Every method is called synchronously from
    :meth:`Orchestrator.run`; an exception raised here is logged and otherwise ignored."""

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        """The agent store's status or active tool changed."""
        ...

    def on_message(self, message: ChatMessage) -> None:
        """``message`` was appended to the history and the chat store."""
        ...

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        """The running tool reported progress (``fraction`` clamped to 0..1)."""
        ...

    def on_text(self, delta: str) -> None:
        """A piece of the answer arrived (a streaming client); the finished message follows with ``on_message``."""
        ...


class Orchestrator:
    """Runs the spec's tool-call loop over the given client, registry and stores."""

    def __init__(
        self,
        client: ChatClient,
        registry: ToolRegistry,
        chat: ChatStore,
        agent: AgentStore,
        *,
        media: MediaLibrary | None = None,
        data_dir: Path | None = None,
        listener: OrchestratorListener | None = None,
        should_stop: Callable[[], bool] | None = None,
        max_iterations: int = MAX_ITERATIONS,
        max_result_chars: int = MAX_RESULT_CHARS,
        max_calls_per_round: int = MAX_CALLS_PER_ROUND,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if max_calls_per_round < 1:
            raise ValueError("max_calls_per_round must be at least 1")
        self.client = client
        self.registry = registry
        self.chat = chat
        self.agent = agent
        self.media = media
        self.data_dir = data_dir
        self.listener = listener
        self.should_stop = should_stop
        self.stopped = False
        """Whether the last run ended because the user pressed Stop."""
        self._partial = ""
        self.max_iterations = max_iterations
        self.max_result_chars = max_result_chars
        self.max_calls_per_round = max_calls_per_round
        self._lock = threading.Lock()

    # -- the loop --------------------------------------------------------------------------------

    def run(self, messages: Sequence[ChatMessage] | None = None, context: AgentContext | None = None) -> None:
        """Run one turn to its end: a final answer, the iteration cap, or an error in the chat store.

        ``messages`` defaults to the chat store's history (the page appends the user's message
        first), ``context`` to the agent store's. Never raises for a model or tool failure; raises
        :class:`OrchestratorBusyError` if this orchestrator is already running (a second run would
        interleave its messages with the first's).
        """
        if not self._lock.acquire(blocking=False):
            raise OrchestratorBusyError("The assistant is still working on the previous message")
        finished = False
        self.stopped = False
        try:
            history = list(messages) if messages is not None else self.chat.messages
            if context is None:
                context = self.agent.context
            self.chat.set_error(None)
            self.chat.set_loading(True)
            self._loop(history, context)
            finished = True
        except Exception as exc:  # noqa: BLE001 - any failure must end in the error state, logged in _fail
            self._fail(exc)
            finished = True
        finally:
            self.chat.set_loading(False)
            if not finished:
                # Interrupted from outside (KeyboardInterrupt, a thread ended): the run
                # is over, so the page must not keep showing it as busy.
                self.agent.reset()
            self._lock.release()

    def _loop(self, history: list[ChatMessage], context: AgentContext | None) -> None:
        for _ in range(self.max_iterations):
            if self._stop_asked():
                return self._end_stopped(history)
            self._set_status("sending")
            self._partial = ""
            try:
                response = self._send(ChatRequest(messages=history, context=context))
            except ChatError as exc:
                if exc.kind is not ErrorKind.STOPPED:
                    raise
                self._partial = self._partial or exc.partial_text  # the stream was closed at Stop
                return self._end_stopped(history)
            if self._stop_asked():  # an answer that arrives after Stop is not used
                return self._end_stopped(history)
            if not response.tool_calls:
                self._set_status("responding")
                self._append(
                    history,
                    ChatMessage(
                        role="assistant",
                        content=response.content,
                        provider_metadata=response.provider_metadata,
                        usage=response.usage,
                        context=response.context,
                    ),
                )
                self._set_status("idle")
                return
            self._tool_round(history, response, context)
        self._append(history, ChatMessage(role="assistant", content=ITERATION_LIMIT_MESSAGE))
        self._set_status("idle")

    def _stop_asked(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def _end_stopped(self, history: list[ChatMessage]) -> None:
        """End the run as the user asked: the text streamed so far is kept, marked as stopped."""
        if self._partial:
            self._append(history, ChatMessage(role="assistant", content=self._partial, stopped=True))
            self._partial = ""
        self.stopped = True
        self._set_status("idle")

    def text_arrived(self, delta: str) -> None:
        """A streaming client's ``on_text``: the answer so far, for the page and for Stop to keep."""
        self._partial += delta
        self._notify("on_text", delta)

    def _tool_round(self, history: list[ChatMessage], response: ChatResponse, context: AgentContext | None) -> None:
        """Append the assistant's tool-call message, then answer every call, in order, with one tool message.

        Once the tool-call message is stored, every call gets an answer even if the round is cut
        short (a Streamlit rerun interrupts a long tool, storage fails): providers reject a history
        in which an assistant tool call has no answer, and this history is stored, so one unanswered
        call would break every later request of the conversation.
        """
        calls = unique_call_ids(response.tool_calls or [], history)
        message = ChatMessage(
            role="assistant",
            content=response.content,
            tool_calls=calls,
            provider_metadata=response.provider_metadata,
            usage=response.usage,
            context=response.context,
        )
        pending = list(calls)
        try:
            self._append(history, message)
            self._set_status("processing")
            while pending:
                if self._stop_asked():
                    result = ToolResult(tool_call_id=pending[0].id, name=pending[0].name, error=NOT_RUN_STOPPED)
                elif len(calls) - len(pending) < self.max_calls_per_round:
                    result = self._resolve(pending[0], context)
                else:
                    result = self._over_cap(pending[0], len(calls))
                pending.pop(0)
                result = as_model_data(result)
                self._append(history, ChatMessage(role="tool", content=summarize(result), tool_result=result))
        except BaseException as exc:
            if isinstance(exc, Exception):
                reason = f"Not run: the run stopped ({describe_exception(exc)})"
            else:
                reason = "Not run: the run was interrupted before this call finished"
            # The store keeps a message even when writing it through fails, so ask the store.
            if any(stored.id == message.id for stored in self.chat.messages):
                self._answer_abandoned(history, pending, reason)
            raise

    def _answer_abandoned(self, history: list[ChatMessage], calls: list[ToolCall], reason: str) -> None:
        """Best effort, and without the listener (which may be what is being interrupted)."""
        for call in calls:
            result = ToolResult(tool_call_id=call.id, name=call.name, error=reason)
            try:
                history.append(
                    self.chat.add_message(ChatMessage(role="tool", content=summarize(result), tool_result=result))
                )
            except Exception:
                logger.warning("Could not record the abandoned call %s", call.id, exc_info=True)

    def _send(self, request: ChatRequest) -> ChatResponse:
        """One round trip; every failure of the client becomes a :class:`ChatError`."""
        try:
            response = self.client.send(request, on_text=self.text_arrived, cancel=_StopSignal(self._stop_asked))
        except ChatError:
            raise
        except Exception as exc:
            # A ChatClient should raise ChatError; anything else may carry a URL or a header
            # in its text, so only its type is shown and the details go to the server log.
            logger.warning("Chat client failed", exc_info=True)
            raise ChatError(
                ErrorKind.UNREACHABLE, f"The assistant could not be reached ({type(exc).__name__})"
            ) from exc
        if not isinstance(response, ChatResponse):
            raise ChatError(
                ErrorKind.UNREACHABLE, f"The assistant's answer was not understood ({type(response).__name__})"
            )
        return response

    # -- one tool call ---------------------------------------------------------------------------

    def _over_cap(self, call: ToolCall, asked: int) -> ToolResult:
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            error=f"Not run: at most {self.max_calls_per_round} tool calls run per turn and {asked} were asked "
            "for; call again for the ones you still need",
        )

    def _resolve(self, call: ToolCall, context: AgentContext | None) -> ToolResult:
        """Validate and run one call; every failure becomes the result's ``error``."""
        tool = self.registry.get(call.name)
        if tool is None:
            return ToolResult(
                tool_call_id=call.id, name=call.name, error=describe_unknown_tool(call.name, self.registry.names())
            )
        if call.arguments_error is not None:
            # The adapter could not read the provider's arguments: running with ``{}`` would guess.
            problem = f"Unreadable arguments for {call.name}: {call.arguments_error}"
            return ToolResult(tool_call_id=call.id, name=call.name, error=problem)
        try:
            arguments = parse_tool_args(tool, call.args)
        except ToolArgumentsError as exc:
            return ToolResult(tool_call_id=call.id, name=call.name, error=str(exc))

        environment = ToolEnvironment(
            context=context,
            media=self.media,
            data_dir=self.data_dir,
            report_progress=lambda fraction, message: self._progress(call, fraction, message),
            should_stop=self._stop_asked,
        )
        self._set_status("processing", call.name)
        started = time.perf_counter()
        try:
            raw = tool.execute(arguments, environment)
            result = self._sendable(call.name, raw)
            error = None
        except UnsendableResultError as exc:
            result, error = None, str(exc)
        except StopRequested:
            result, error = None, STOPPED_TOOL_ERROR
        except Exception as exc:
            logger.info("Tool %s failed", call.name, exc_info=True)
            result, error = None, STOPPED_TOOL_ERROR if self._stop_asked() else describe_exception(exc)
        finally:
            duration_ms = round((time.perf_counter() - started) * 1000)
            self._set_status("processing", None)
        return ToolResult(tool_call_id=call.id, name=call.name, result=result, error=error, duration_ms=duration_ms)

    def _sendable(self, name: str, raw: object) -> object:
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
        if len(text) > self.max_result_chars:
            raise UnsendableResultError(
                f"{name} returned {len(text):,} characters of JSON, more than the {self.max_result_chars:,} "
                "that can be sent to the model; call it again with narrower arguments"
            )
        return data

    # -- stores and listener ---------------------------------------------------------------------

    def _append(self, history: list[ChatMessage], message: ChatMessage) -> None:
        stored = self.chat.add_message(message)
        history.append(stored)
        self._notify("on_message", stored)

    def _set_status(self, status: ExecutionState, active_tool: str | None = None) -> None:
        self.agent.set_status(status)
        self.agent.set_active_tool(active_tool)
        self._notify("on_status", status, active_tool)

    def _progress(self, call: ToolCall, fraction: float, message: str) -> None:
        if self._stop_asked():
            raise StopRequested
        try:
            clamped = min(1.0, max(0.0, float(fraction)))
        except (TypeError, ValueError):
            clamped = 0.0
        self._notify("on_tool_progress", call, clamped, str(message))

    def _notify(self, method: str, *args: object) -> None:
        """Call the listener, if any; its failure must not end the run or leave the stores half-set."""
        if self.listener is None:
            return
        try:
            getattr(self.listener, method)(*args)
        except Exception:
            logger.warning("Orchestrator listener %s failed", method, exc_info=True)

    def _fail(self, exc: Exception) -> None:
        """End the run in the error state with a message that is safe to show."""
        kind: ErrorKind | None = None
        if isinstance(exc, ChatError):
            message, kind = str(exc) or "The assistant could not be reached", exc.kind
            logger.info("Orchestrator run failed (%s): %s", kind, message)
        else:
            # Our own failure (a store or its persistence): worth a traceback in the server log.
            message = f"Internal error: {describe_exception(exc)}"
            logger.exception("Orchestrator run failed")
        self.chat.set_error(message, kind)
        self.agent.set_active_tool(None)
        self.agent.set_status("error")
        self._notify("on_status", "error", None)


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


def as_model_data(result: ToolResult) -> ToolResult:
    """``result`` with invisible and direction-changing characters escaped in every string: a transcript
    or a file name reaches the model as the characters it holds, never text that reads in another order
    (the system prompt tells the model that tool results are data, not instructions)."""
    error = None if result.error is None else escape_invisible(result.error)
    return result.model_copy(update={"result": escape_invisible_in(result.result), "error": error})


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
