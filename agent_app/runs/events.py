"""Every event a run records, as one pydantic union: the recorder writes it, the page's live view reads it,
the chat route's Server-Sent Events send it.

Storage keeps each event as its ``kind`` and the rest as camelCase JSON (:meth:`RunEventBase.stored_json`),
the same shapes the first release wrote, so old rows read as these models. Each kind has its SSE name
(:data:`SSE_NAMES`, the names README.md lists); a run's end is ``done``, or ``error`` when it failed.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, get_args

from pydantic import Field, TypeAdapter

from agent_app.errors import ErrorKind
from agent_app.runs.models import RunState
from agent_app.types import ChatResponse, ExecutionState, Role, TokenUsage, ToolCall, WireModel

_JSON_OPTIONS: dict[str, Any] = {"by_alias": True, "exclude_none": True, "exclude": {"kind"}}


class RunEventBase(WireModel):
    """What every event has: its ``kind`` (the discriminator, stored beside the JSON) and its SSE name."""

    SSE_NAME: ClassVar[str]

    def stored_json(self) -> str:
        """The event without its kind, as storage keeps it."""
        return self.model_dump_json(**_JSON_OPTIONS)

    @property
    def sse_name(self) -> str:
        return self.SSE_NAME

    def sse_data(self) -> str:
        """The SSE ``data`` line: the event's camelCase JSON."""
        return self.model_dump_json(**_JSON_OPTIONS)

    def sse(self) -> bytes:
        """The event as one Server-Sent Event."""
        return f"event: {self.sse_name}\ndata: {self.sse_data()}\n\n".encode()


class StatusEvent(RunEventBase):
    """The agent's status or active tool changed."""

    SSE_NAME = "status"
    kind: Literal["status"] = "status"
    status: ExecutionState
    active_tool: str | None = None


class TextEvent(RunEventBase):
    """The next piece of the answer's text, as the provider streamed it (the finished message replaces it)."""

    SSE_NAME = "text"
    kind: Literal["text"] = "text"
    delta: str


class ToolCallEvent(RunEventBase):
    """A tool call the model asked for, once its answer was complete: the call's own fields."""

    SSE_NAME = "toolCall"
    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None

    @classmethod
    def of(cls, call: ToolCall) -> ToolCallEvent:
        return cls(id=call.id, name=call.name, args=call.args, arguments_error=call.arguments_error)


class ToolProgressEvent(RunEventBase):
    """The running tool reported progress (``fraction`` 0..1)."""

    SSE_NAME = "toolProgress"
    kind: Literal["tool_progress"] = "tool_progress"
    tool_call_id: str
    name: str = ""
    fraction: float = 0.0
    message: str = ""


class ToolResultEvent(RunEventBase):
    """A call was answered (its result is in the tool message); ``error`` when it failed or was not run."""

    SSE_NAME = "toolResult"
    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    error: str | None = None


class MessageEvent(RunEventBase):
    """A message was appended to the conversation (its body is there)."""

    SSE_NAME = "message"
    kind: Literal["message"] = "message"
    id: str
    role: Role
    tool_call_id: str | None = None


class UsageEvent(RunEventBase):
    """Tokens of one model request, as the provider counted them."""

    SSE_NAME = "usage"
    kind: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, usage: TokenUsage) -> UsageEvent:
        return cls(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


class EndEvent(RunEventBase):
    """How it ended; always the last event. ``answer``: the whole answer of a chat request over SSE (its
    ``done`` data is exactly the JSON body of a non-streamed 200); a run's answers are its messages."""

    SSE_NAME = "done"
    FAILED_SSE_NAME: ClassVar[str] = "error"
    kind: Literal["end"] = "end"
    state: RunState
    error: str | None = None
    error_kind: ErrorKind | None = None
    answer: ChatResponse | None = None

    @property
    def sse_name(self) -> str:
        return self.FAILED_SSE_NAME if self.state == "error" else self.SSE_NAME

    def sse_data(self) -> str:
        if self.state == "error":  # the route's error body, with the kind a client can act on
            kind = None if self.error_kind is None else self.error_kind.value
            return json.dumps({"error": self.error or "", "kind": kind}, ensure_ascii=False, separators=(",", ":"))
        if self.answer is not None:
            return self.answer.model_dump_json(by_alias=True, exclude_none=True)
        return super().sse_data()


RunEventData: TypeAlias = Annotated[
    StatusEvent
    | TextEvent
    | ToolCallEvent
    | ToolProgressEvent
    | ToolResultEvent
    | MessageEvent
    | UsageEvent
    | EndEvent,
    Field(discriminator="kind"),
]
"""Any event of a run."""

_EVENT: TypeAdapter[RunEventData] = TypeAdapter(RunEventData)

EVENT_TYPES: tuple[type[RunEventBase], ...] = get_args(get_args(RunEventData)[0])
SSE_NAMES: tuple[str, ...] = (*(cls.SSE_NAME for cls in EVENT_TYPES), EndEvent.FAILED_SSE_NAME)
"""Every Server-Sent Event name an event can go out as."""


def stored_event(kind: str, data: str) -> RunEventData:
    """An event as storage kept it: its kind and its JSON (``ValidationError`` for an unknown kind)."""
    return _EVENT.validate_python({**json.loads(data), "kind": kind})


class RunEvent(WireModel):
    """One thing that happened in a run, numbered from 1 in the order it happened."""

    run_id: str
    seq: int
    data: RunEventData
    created_at: int

    @property
    def kind(self) -> str:
        return self.data.kind
