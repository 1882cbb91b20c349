"""The agent loop: send the history, run the tools the model asks for, feed the results back, stop.

One :meth:`Orchestrator.run` is one user turn. It talks to the model only through a
:class:`~agent_app.types.ChatClient` (never an SDK), to tools only through the
:class:`~agent_app.registry.ToolRegistry`, and to its watchers only through the stores and an optional
:class:`~agent_app.orchestrator_options.OrchestratorListener`, so the same loop runs as a server run
(:mod:`agent_app.runs.turn`, whose listener records run events), behind an HTTP client and in tests.

The failure rules, which the spec draws between two kinds of error:

* A *tool* failing (it raises, its arguments are invalid, it does not exist, its result cannot be
  sent) is part of the conversation: it becomes a ``ToolResult.error`` and the loop goes on, so the
  model can recover.
* The *model* being unreachable (``ChatError`` or any exception from the client) ends the run: the
  chat store's ``error`` and its kind are set, status ``error``; nothing appended so far is removed.

Everything appended goes to both the local history (what the next request sends) and the chat
store (what the page shows and storage keeps), in the same order.

Bounds (:class:`~agent_app.orchestrator_options.OrchestratorOptions`): ``MAX_ITERATIONS`` round trips,
``MAX_CALLS_PER_ROUND`` calls run per model turn, ``MAX_RESULT_CHARS`` of JSON per result. There is
deliberately no per-tool timeout: a Python thread cannot be stopped, so a "timed out" tool would go on
transcribing in the background while the model is told it failed, and a long video legitimately takes
minutes; a stuck run is ended by the user's Stop (the options' ``cancellation``): the model's stream is closed
at once, a tool that reports progress stops at its next report, and every open call is answered (see
:meth:`Orchestrator._tool_round`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from agent_app.errors import ChatError, ErrorKind
from agent_app.orchestrator_options import OrchestratorOptions
from agent_app.registry import ToolRegistry
from agent_app.session_stores import AgentStore, ChatStore
from agent_app.tool_calls import (
    ReadyCall,
    describe_exception,
    over_cap_result,
    prepare_call,
    run_call,
    summarize,
    tool_message,
    unique_call_ids,
)
from agent_app.types import (
    AgentContext,
    ChatClient,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ExecutionState,
    StopRequested,
    ToolCall,
    ToolEnvironment,
    ToolResult,
)

logger = logging.getLogger(__name__)

ITERATION_LIMIT_MESSAGE = "Reached maximum iteration limit"
"""The assistant message appended when the cap stops a run."""

NOT_RUN_STOPPED = "Not run: the user pressed Stop before this call ran"


class OrchestratorBusyError(RuntimeError):
    """:meth:`Orchestrator.run` was called while a run of the same orchestrator is in progress."""


class Orchestrator:
    """Runs the spec's tool-call loop over the given client, registry and stores."""

    def __init__(
        self,
        client: ChatClient,
        registry: ToolRegistry,
        chat: ChatStore,
        agent: AgentStore,
        options: OrchestratorOptions | None = None,
    ) -> None:
        self.client = client
        self.registry = registry
        self.chat = chat
        self.agent = agent
        self.options = options if options is not None else OrchestratorOptions()
        self.stopped = False
        """Whether the last run ended because the user pressed Stop."""
        self._partial = ""
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
        for _ in range(self.options.max_iterations):
            if self._stop_asked():
                return self._end_stopped(history)
            self._set_status("sending")
            self._partial = ""
            try:
                response = self._send(ChatRequest(messages=history, context=context))
            except StopRequested as stop:  # the stream was closed at Stop
                self._partial = self._partial or stop.partial_text
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
        return self.options.cancellation.is_set()

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
                elif len(calls) - len(pending) < self.options.max_calls_per_round:
                    result = self._resolve(pending[0], context)
                else:
                    result = over_cap_result(pending[0], self.options.max_calls_per_round, len(calls))
                pending.pop(0)
                self._append(history, tool_message(result))
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
            response = self.client.send(request, on_text=self.text_arrived, cancellation=self.options.cancellation)
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

    def _resolve(self, call: ToolCall, context: AgentContext | None) -> ToolResult:
        """Validate and run one call (:mod:`agent_app.tool_calls`), showing it as the active tool while it runs."""
        ready = prepare_call(call, self.registry)
        if not isinstance(ready, ReadyCall):
            return ready
        environment = ToolEnvironment(
            context=context,
            media=self.options.media,
            data_dir=self.options.data_dir,
            settings=self.options.settings,
            report_progress=lambda fraction, message: self._progress(call, fraction, message),
            cancellation=self.options.cancellation,
        )
        self._set_status("processing", call.name)
        try:
            return run_call(ready, environment, self.options.max_result_chars)
        finally:
            self._set_status("processing", None)

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
        self.options.cancellation.check()
        try:
            clamped = min(1.0, max(0.0, float(fraction)))
        except (TypeError, ValueError):
            clamped = 0.0
        self._notify("on_tool_progress", call, clamped, str(message))

    def _notify(self, method: str, *args: object) -> None:
        """Call the listener, if any; its failure must not end the run or leave the stores half-set."""
        listener = self.options.listener
        if listener is None:
            return
        try:
            getattr(listener, method)(*args)
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
