"""The shared types of the agent: the single source of truth for stores, orchestrator, registry,
route and adapters.

Python attributes are snake_case; the JSON form (what crosses ``POST /api/agent/chat`` and what is
stored) is the spec's camelCase. Every model accepts both spellings on input
(``populate_by_name``) and :meth:`WireModel.to_wire` emits camelCase, so no module ever hand-builds a
wire dictionary.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar, runtime_checkable

from pydantic import ConfigDict, Field

from agent_app.cancellation import Cancellation as Cancellation  # noqa: PLC0414 - re-exported for tools
from agent_app.cancellation import StopRequested as StopRequested  # noqa: PLC0414 - re-exported for tools
from agent_app.settings import Settings
from agent_app.tool_args import ParameterType as ParameterType  # noqa: PLC0414 - re-exported shared type
from agent_app.tool_args import ToolArgs, argument_specs
from agent_app.tool_args import ToolParameter as ToolParameter  # noqa: PLC0414 - re-exported shared type
from agent_app.transcript_edits import TranscriptEdits
from agent_app.wire_model import WireModel as WireModel  # noqa: PLC0414 - re-exported shared type

if TYPE_CHECKING:
    from agent_app.media.transcript_cache import TranscriptStore

Role: TypeAlias = Literal["user", "assistant", "tool", "system"]
"""Who wrote a message. ``tool`` messages carry a :class:`ToolResult`."""

ExecutionState: TypeAlias = Literal["idle", "sending", "processing", "responding", "error"]
"""The agent's status, as the spec names it."""

MediaKind: TypeAlias = Literal["video", "audio"]


def new_id() -> str:
    """A fresh opaque identifier (32 hex characters, safe in URLs, file names and provider ids): 128 random
    bits, without building a ``UUID`` object (every message and tool call takes one)."""
    return os.urandom(16).hex()


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch: the unit of every ``timestamp``."""
    return time.time_ns() // 1_000_000


class ToolCall(WireModel):
    """One call of a tool requested by the model. ``id`` is never empty (adapters synthesize one).

    ``arguments_error`` is set by an adapter when the provider sent arguments it could not read
    (malformed JSON from an OpenAI-compatible server); ``args`` is then ``{}``. Such a call must not
    run: the orchestrator answers it with a ``ToolResult`` whose ``error`` is this text, so the model
    can retry, instead of the whole request failing.
    """

    model_config = ConfigDict(frozen=True)  # a message is worked out once per object: see ChatMessage

    id: str = Field(min_length=1)
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None


class ToolResult(WireModel):
    """The outcome of one :class:`ToolCall`: ``result`` on success, ``error`` (a description) on failure.

    ``name`` repeats the tool's name because some providers (Gemini) match results by name.
    """

    model_config = ConfigDict(frozen=True)  # a message is worked out once per object: see ChatMessage

    tool_call_id: str
    name: str
    result: Any = None
    error: str | None = None
    duration_ms: int | None = None


class TokenUsage(WireModel):
    """Tokens of one model request as the provider counted them (``prompt_tokens`` /
    ``promptTokenCount`` in, ``completion_tokens`` / ``candidatesTokenCount`` out)."""

    model_config = ConfigDict(frozen=True)  # a message is worked out once per object: see ChatMessage

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ContextReport(WireModel):
    """How one request's history was fitted into the model's context window (see
    :mod:`agent_app.context_fit`): stored on the assistant message it produced, so the page can mark the
    cut and show how full the context is, and the next request can compare its estimate with ``usage``.

    ``estimated_tokens`` is the estimate of what was sent, already multiplied by ``scale`` (the correction
    learnt from the provider's earlier usage); ``first_sent_id`` is the oldest non-system message sent when
    ``left_out_messages`` older ones were not.
    """

    model_config = ConfigDict(frozen=True)  # a message is worked out once per object: see ChatMessage

    window_tokens: int = Field(ge=1)
    budget_tokens: int = Field(ge=1)
    estimated_tokens: int = Field(ge=0)
    scale: float = Field(default=1.0, gt=0)
    left_out_messages: int = Field(default=0, ge=0)
    first_sent_id: str | None = None
    stubbed_results: int = Field(default=0, ge=0)


class ChatMessage(WireModel):
    """One entry of a conversation.

    * ``user``/``system``: ``content``.
    * ``assistant``: ``content`` and, when it asked for tools, ``tool_calls``.
    * ``tool``: ``tool_result`` (``content`` holds a short human-readable summary).

    ``provider_metadata`` is opaque: an adapter may store what it must replay on the next request
    (Gemini thought signatures, the provider's raw turn); nothing else reads it.
    """

    model_config = ConfigDict(frozen=True)
    """Frozen, with its parts: a history sent once is sent unchanged, so a change is a copy
    (``model_copy(update=...)``)."""

    id: str = Field(default_factory=new_id, min_length=1)
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] | None = None
    tool_result: ToolResult | None = None
    timestamp: int = Field(default_factory=now_ms)
    provider_metadata: dict[str, Any] | None = None
    usage: TokenUsage | None = None
    """On an assistant message: the provider's token count of the request that produced it."""
    context: ContextReport | None = None
    """On an assistant message: how the request that produced it was fitted into the context window."""
    stopped: bool | None = None
    """``True`` on an answer the user stopped part-way (its ``content`` is what had arrived)."""


class MediaAsset(WireModel):
    """A media file of the project, as the assistant and the page know it."""

    id: str = Field(min_length=1)
    name: str
    kind: MediaKind = "video"
    duration_ms: int | None = None
    size_bytes: int | None = None
    mime_type: str | None = None


class AgentContext(WireModel):
    """What the assistant knows of the user's workspace at the time of a request.

    ``active_asset_id`` extends the spec's four fields: the asset shown in the player, which tools
    use when the model names none; ``active_scene_name`` and ``unlisted_asset_count`` extend them too.
    """

    project_id: str
    active_scene_id: str | None = None
    media_assets: list[MediaAsset] = Field(default_factory=list)
    playback_time_ms: int = Field(default=0, ge=0)
    active_asset_id: str | None = None
    active_scene_name: str | None = None
    """The scene's name as the user sees it: "the intro scene" means nothing to a model given only an id."""
    unlisted_asset_count: int | None = Field(default=None, ge=0)
    """Assets of the project left out of ``media_assets`` (a large library is listed newest first, bounded)."""


class ToolSchema(WireModel):
    """A tool as offered to the model: what ``ToolRegistry.to_tool_schemas()`` exports and each
    adapter converts to its own wire format."""

    name: str
    description: str
    parameters: list[ToolParameter] = Field(default_factory=list)


def history_call_ids(messages: Iterable[ChatMessage]) -> set[str]:
    """Every tool-call id already in the conversation. A new call must not reuse one: servers that number
    calls per response (``call_0`` every turn) would otherwise give two turns the same id, and the page
    matches results (cards, recovery of an interrupted run) to calls by id across the conversation."""
    return {call.id for message in messages for call in message.tool_calls or []}


def synthesize_call_id() -> str:
    """A unique tool-call id for providers that send none: ``call_`` + 32 hex (37 characters of
    ``[A-Za-z0-9_]``, within every provider's id rules)."""
    return f"call_{new_id()}"


class ChatRequest(WireModel):
    """The body of ``POST /api/agent/chat``."""

    messages: list[ChatMessage]
    context: AgentContext | None = None


class ChatResponse(WireModel):
    """The answer of ``POST /api/agent/chat``.

    ``provider_metadata`` rides along for the orchestrator to store on the assistant message so the
    adapter can replay the turn exactly (opaque to everybody else).
    """

    content: str = ""
    tool_calls: list[ToolCall] | None = None
    provider_metadata: dict[str, Any] | None = None
    usage: TokenUsage | None = None
    context: ContextReport | None = None


ProgressCallback: TypeAlias = Callable[[float, str], None]
"""``report_progress(fraction 0..1, message)``: how a long-running tool tells the page how far it is."""


@runtime_checkable
class MediaLibrary(Protocol):
    """What a tool may ask of the project's media (implemented by the storage layer)."""

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        """The asset's metadata, or ``None`` when no such asset exists."""
        ...

    def media_file(self, asset_id: str) -> AbstractContextManager[Path | None]:
        """The asset's bytes as a file on this machine for the ``with`` block (``None`` when it has none):
        the file itself on the local disk, a temporary download (removed after) from an object store."""
        ...

    def known_hash(self, asset_id: str) -> str | None:
        """The SHA-256 of the asset's bytes when known without reading them (cheap: for the page)."""
        ...

    def content_hash(self, asset_id: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        """The SHA-256 of the asset's bytes, read when not known yet; ``None`` when it has none."""
        ...

    def transcripts(self) -> TranscriptStore:
        """The transcript cache kept beside the media (the same disk or bucket)."""
        ...

    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        """The user's corrections and speaker names for the asset's transcript (none: empty)."""
        ...


def _ignore_progress(fraction: float, message: str) -> None:
    """Default progress sink for callers that do not display progress."""


@dataclass(frozen=True)
class ToolEnvironment:
    """Everything a tool may use besides its arguments, handed to ``execute`` by the orchestrator.

    Tools never reach into Streamlit or global state: what they need comes through here, so the
    same tool runs in the page, in the HTTP route's callers and in tests.
    """

    context: AgentContext | None = None
    media: MediaLibrary | None = None
    data_dir: Path | None = None
    settings: Settings = field(default_factory=Settings)
    """The settings of the run or page session the tool works for (default: every setting at its default)."""
    report_progress: ProgressCallback = field(default=_ignore_progress)
    cancellation: Cancellation = field(default_factory=Cancellation)
    """The run's Stop: ``report_progress`` raises :class:`StopRequested` once it is set; a tool that waits or
    loops without reporting progress looks at it (``is_set``, ``wait``, ``check``)."""


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


@dataclass(frozen=True)
class ToolDefinition(Generic[ArgsT]):
    """A tool: its name, what it is for (the model reads ``description``), its arguments declared once as a
    :class:`ToolArgs` model, and ``execute(args, env) -> JSON-serializable result`` (raising means the call
    failed). ``parameters``, the spec's list, is generated from ``arguments``."""

    name: str
    description: str
    arguments: type[ArgsT]
    execute: Callable[[ArgsT, ToolEnvironment], Any]
    parameters: list[ToolParameter] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", list(argument_specs(self.arguments)))

    def to_schema(self) -> ToolSchema:
        """The provider-agnostic schema of this tool (without the callable; parameters are frozen)."""
        return ToolSchema(name=self.name, description=self.description, parameters=list(self.parameters))


@runtime_checkable
class ChatClient(Protocol):
    """How the orchestrator reaches ``POST /api/agent/chat``: in-process or over HTTP."""

    def send(
        self,
        request: ChatRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancellation: Cancellation | None = None,
    ) -> ChatResponse:
        """Send one request; raise :class:`~agent_app.errors.ChatError` on any API or network failure.

        ``on_text`` gets each piece of the answer's text as it arrives; once ``cancellation`` is set the
        request is abandoned at once (the provider's response closed) and :class:`StopRequested` raised with the
        text so far as its ``partial_text``."""
        ...
