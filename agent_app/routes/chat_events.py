"""``POST /api/agent/chat`` as Server-Sent Events, for a client that sends ``Accept: text/event-stream``.

Why: a caller elsewhere shows the answer as it is written, like the page does. The events are the run
events of :mod:`agent_app.runs.events` (each ``data`` is one line of camelCase JSON):

==========  ===========================================================================================
``text``      ``{"delta": "..."}``: the next piece of the answer's text, as the provider streamed it
``toolCall``  a tool call the model asked for, ``{id, name, args, argumentsError?}``, once the answer is
              complete
``usage``     ``{inputTokens, outputTokens}``: the provider's token count of the request, when it sent one
``done``      the whole answer, exactly the JSON body of a non-streamed 200; always the last event
``error``     ``{"error": "LLM provider error", "kind": ...}``: the provider failed after text had been sent;
              the text so far is not an answer (nothing follows)
==========  ===========================================================================================

Headers go out only with the first event: a request that fails before any text (a rejected key, a rate
limit, a 5xx...) is answered with the same status and JSON body as without SSE. Deltas that are already
waiting go out in one write (still one event each). A client that disconnects stops the provider's request at
once (:class:`EventStreamResponse`); one that reads slowly holds the provider's stream, with a bounded buffer
between them (:mod:`agent_app.routes.delta_buffer`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from agent_app.chat_handler import ChatHandler
from agent_app.errors import ChatError, ErrorKind
from agent_app.routes.delta_buffer import DeltaBuffer
from agent_app.routes.disconnect import watch_disconnect
from agent_app.runs.events import EndEvent, RunEventBase, TextEvent, ToolCallEvent, UsageEvent
from agent_app.settings import Settings
from agent_app.types import ChatRequest, ChatResponse

EVENT_STREAM = "text/event-stream"
JSON = "application/json"


def _accepted(header: str) -> dict[str, float]:
    """``Accept``'s media ranges with their q-values (1 unless given; an unreadable q counts as 0)."""
    ranges: dict[str, float] = {}
    for item in header.lower().split(","):
        media, *params = (part.strip() for part in item.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    quality = 0.0
        ranges[media] = max(quality, ranges.get(media, 0.0))
    return ranges


def wants_event_stream(headers: Mapping[str, str]) -> bool:
    """Whether the client asked for Server-Sent Events: ``text/event-stream`` named in ``Accept`` with a q-value
    above 0 and not below JSON's (its most specific range: ``application/json``, ``application/*``, ``*/*``)."""
    ranges = _accepted(headers.get("accept", ""))
    events = ranges.get(EVENT_STREAM, 0.0)
    json_quality = next((ranges[media] for media in (JSON, "application/*", "*/*") if media in ranges), 0.0)
    return events > 0 and events >= json_quality


def answer_events(answer: ChatResponse) -> list[bytes]:
    """The events that close a successful stream: each tool call, the usage, then ``done``."""
    events: list[RunEventBase] = [ToolCallEvent.of(call) for call in answer.tool_calls or []]
    if answer.usage is not None:
        events.append(UsageEvent.of(answer.usage))
    events.append(EndEvent(state="answered", answer=answer))
    return [event.sse() for event in events]


async def event_stream(
    request: ChatRequest,
    settings: Settings,
    receive: Receive,
    on_error: Callable[[ChatError], Response],
    release: Callable[[], None],
) -> Response:
    """Answer ``request`` as events, or with ``on_error``'s response when it fails before any text.
    ``release`` is called once the provider request is over, however it ends; the client disconnecting
    (``receive``) cancels it in any phase."""
    deltas = DeltaBuffer()
    task = asyncio.create_task(ChatHandler(settings).answer(request, deltas.put))

    def finished(_: asyncio.Task[ChatResponse]) -> None:
        release()
        deltas.end()

    task.add_done_callback(finished)
    watcher = watch_disconnect(receive, task)  # from the start: a client may leave before the first text
    try:
        first = await deltas.get()
    except BaseException:  # the endpoint itself was cancelled (the server stopping)
        watcher.cancel()
        task.cancel()
        raise
    if first is None:
        try:
            task.result()
        except asyncio.CancelledError:
            watcher.cancel()
            return on_error(client_left())
        except ChatError as exc:
            watcher.cancel()
            return on_error(exc)
    return EventStreamResponse(task, deltas, first, watcher)


def client_left() -> ChatError:
    """What a request whose client disconnected before its answer is answered with (nobody reads it)."""
    return ChatError(ErrorKind.INVALID_REQUEST, "Invalid request: the client disconnected")


class EventStreamResponse(Response):
    """The answer of ``task`` as a ``text/event-stream`` body: each text delta of ``deltas`` (``None`` once
    the task is over), then the closing events; the client going away cancels ``task``.

    Why not Starlette's ``StreamingResponse`` over a generator: it watches for the disconnect with an anyio
    task group of two tasks per response, and every chunk, the empty last one too, passes the server's
    middleware once more; here one plain task watches, and the closing events go out with the last chunk.
    A cancelled provider request ends the body without an error event."""

    media_type = EVENT_STREAM

    def __init__(
        self,
        task: asyncio.Task[ChatResponse],
        deltas: DeltaBuffer,
        first: str | None,
        watcher: asyncio.Task[None],
    ) -> None:
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})  # no body: no Content-Length
        self._task = task
        self._deltas = deltas
        self._first = first
        self._watcher = watcher

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            chunk = b""
            delta = self._first
            while delta is not None:
                texts, ended = _ready(self._deltas, delta)
                chunk = b"".join([TextEvent(delta=text).sse() for text in texts])
                if ended:
                    break
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = b""
                delta = await self._deltas.get()
            closing = b"".join(_closing_events(self._task))
            await send({"type": "http.response.body", "body": chunk + closing, "more_body": False})
        finally:
            self._watcher.cancel()
            self._task.cancel()  # the provider request stops when the response does, however it ends


def _ready(deltas: DeltaBuffer, first: str) -> tuple[list[str], bool]:
    """``first`` and every delta already waiting behind it, to go out as one chunk (each still its own
    event): a burst of deltas then costs one trip through the server's middleware and one socket write, not
    one each. ``True`` with them when the end of the answer was among them."""
    texts = [first]
    while not deltas.empty():
        item = deltas.get_nowait()
        if item is None:
            return texts, True
        texts.append(item)
    return texts, False


def _closing_events(task: asyncio.Task[ChatResponse]) -> list[bytes]:
    """After the last text: the answer's events, the ``error`` event of a provider that failed mid-way, or
    nothing when the request was cancelled (the client left)."""
    if task.cancelled():
        return []
    try:
        return answer_events(task.result())
    except ChatError as exc:
        return [EndEvent(state="error", error=exc.message, error_kind=exc.kind).sse()]
