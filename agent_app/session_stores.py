"""The chat store and the agent store: the spec's Zustand stores over any ``MutableMapping`` (``st.session_state``
in the app, a ``dict`` in tests), each under its own key prefix so stores and widgets never collide.

The mapping holds JSON text and scalars, never live models: a reader cannot mutate the history by accident,
a module Streamlit reloads cannot leave instances of a stale class behind, and a message storage or the wire
could not carry fails when it is added, not later in a save.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol, TypeAlias, get_args

from agent_app.errors import ErrorKind
from agent_app.types import AgentContext, ChatMessage, ExecutionState

EXECUTION_STATES: tuple[ExecutionState, ...] = get_args(ExecutionState)

SessionState: TypeAlias = MutableMapping[str, Any] | MutableMapping[str | int, Any]
"""Where a store keeps its state: a ``dict`` in tests, ``st.session_state`` in the app. Both key
types are listed because ``SessionStateProxy`` is a ``MutableMapping[str | int, Any]`` and mapping
types are invariant in their key, so ``MutableMapping[str, Any]`` alone would reject it."""


class ChatPersistence(Protocol):
    """The spec's ``persist(...)``: called *after* the store's own state changed, so a failure loses nothing
    from the session. A failed message is written again later, so ``message_added`` must be idempotent."""

    def message_added(self, message: ChatMessage) -> None:
        """``message`` was appended to the conversation."""
        ...

    def messages_cleared(self) -> None:
        """The conversation was emptied."""
        ...


class ChatStore:
    """``messages``, ``loading`` and ``error`` of one conversation, with the spec's actions.

    Messages persistence has not taken yet (a busy, full or read-only database; no persistence yet) wait in
    an ordered queue that every write drains first, so a later message never lands before an earlier one."""

    def __init__(
        self,
        state: SessionState,
        *,
        key: str = "chat",
        persistence: ChatPersistence | None = None,
    ) -> None:
        self._state = state
        self._messages_key = f"{key}.messages"
        self._loading_key = f"{key}.loading"
        self._error_key = f"{key}.error"
        self._error_kind_key = f"{key}.error_kind"
        self._unsaved_key = f"{key}.unsaved"
        self._persistence = persistence
        state.setdefault(self._messages_key, {})
        state.setdefault(self._unsaved_key, [])
        state.setdefault(self._loading_key, False)
        state.setdefault(self._error_key, None)
        state.setdefault(self._error_kind_key, None)

    # -- state -----------------------------------------------------------------------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The history, oldest first: fresh objects every call, so changing them changes nothing."""
        return [ChatMessage.model_validate_json(raw) for raw in self._raw_messages().values()]

    @property
    def loading(self) -> bool:
        """Whether a request (an orchestrator run) is in progress."""
        return bool(self._state.get(self._loading_key, False))

    @property
    def error(self) -> str | None:
        """The last API or network error shown to the user, until cleared."""
        return _optional_str(self._state.get(self._error_key))

    @property
    def error_kind(self) -> ErrorKind | None:
        """Which failure :attr:`error` was, when it was a chat request's (the page words each kind)."""
        kind = self._state.get(self._error_kind_key)
        return ErrorKind(kind) if kind in set(ErrorKind) else None

    @property
    def unsaved(self) -> list[str]:
        """Ids of the messages not written to persistence yet, oldest first."""
        return [str(item) for item in self._state.get(self._unsaved_key) or []]

    @property
    def persistence(self) -> ChatPersistence | None:
        """Where added messages are written through, if anywhere."""
        return self._persistence

    # -- actions ---------------------------------------------------------------------------------

    def add_message(self, message: ChatMessage | Mapping[str, Any]) -> ChatMessage:
        """Append ``message`` (a model, or its dict in either spelling) and write it through; return the model as
        stored (frozen, so nothing can change it afterwards). ``ValueError`` for an invalid message or an ``id``
        already there; nothing changes then."""
        stored = message if isinstance(message, ChatMessage) else ChatMessage.model_validate(dict(message))
        raw = stored.model_dump_json(by_alias=True, exclude_none=True)
        existing = self._raw_messages()
        if stored.id in existing:
            raise ValueError(f"A message with id {stored.id!r} is already in the conversation")
        self._state[self._messages_key] = {**existing, stored.id: raw}
        self._state[self._unsaved_key] = [*self.unsaved, stored.id]
        self.save_unsaved()
        return stored

    def save_unsaved(self) -> int:
        """Write the queued messages through, oldest first; return how many. The first failure is raised,
        and that message and every later one stay queued."""
        if self._persistence is None:
            return 0
        raws = self._raw_messages()
        saved = 0
        for message_id in self.unsaved:
            raw = raws.get(message_id)
            if raw is not None:
                self._persistence.message_added(ChatMessage.model_validate_json(raw))
                saved += 1
            self._state[self._unsaved_key] = self.unsaved[1:]
        return saved

    def set_loading(self, value: bool) -> None:
        self._state[self._loading_key] = bool(value)

    def set_error(self, error: str | None, kind: ErrorKind | None = None) -> None:
        """Show ``error`` (``None`` clears it) of ``kind``. A request that failed is over, so ``loading``
        ends too."""
        self._state[self._error_key] = None if error is None else str(error)
        self._state[self._error_kind_key] = None if error is None or kind is None else str(kind)
        self._state[self._loading_key] = False

    def clear_messages(self) -> None:
        """Empty the conversation and forget its error; persistence is told."""
        self._state[self._messages_key] = {}
        self._state[self._unsaved_key] = []
        self._state[self._error_key] = self._state[self._error_kind_key] = None
        if self._persistence is not None:
            self._persistence.messages_cleared()

    def load_messages(self, messages: list[ChatMessage], *, keep_unsaved: bool = False) -> None:
        """Replace the history with ``messages`` read from storage, *without* writing them back; the error
        and the unsaved queue go, unless ``keep_unsaved`` (the same conversation, reread) keeps the queue."""
        raws: dict[str, str] = {}
        for message in messages:
            if message.id in raws:
                raise ValueError(f"A message with id {message.id!r} appears twice")
            raws[message.id] = message.model_dump_json(by_alias=True, exclude_none=True)
        unsaved: list[str] = []
        if keep_unsaved:
            current = self._raw_messages()
            unsaved = [message_id for message_id in self.unsaved if message_id in current and message_id not in raws]
            raws.update((message_id, current[message_id]) for message_id in unsaved)
        self._state[self._messages_key] = raws
        self._state[self._unsaved_key] = unsaved
        self._state[self._error_key] = self._state[self._error_kind_key] = None

    def set_persistence(self, persistence: ChatPersistence | None) -> None:
        self._persistence = persistence

    def _raw_messages(self) -> dict[str, str]:
        """The stored history: message id -> JSON, in insertion order (ids are unique by construction). Read
        only: every change stores a new dict, so a reader in another thread never sees one change under it."""
        value = self._state.get(self._messages_key, {})
        if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
            raise TypeError(f"Session state {self._messages_key!r} does not hold a chat history written by ChatStore")
        return value


class AgentStore:
    """``status``, ``active_tool`` and ``context`` of the agent, with the spec's actions."""

    def __init__(self, state: SessionState, *, key: str = "agent") -> None:
        self._state = state
        self._status_key = f"{key}.status"
        self._active_tool_key = f"{key}.active_tool"
        self._context_key = f"{key}.context"
        state.setdefault(self._status_key, "idle")
        state.setdefault(self._active_tool_key, None)
        state.setdefault(self._context_key, None)

    @property
    def status(self) -> ExecutionState:
        """What the agent is doing: ``idle``, ``sending``, ``processing``, ``responding`` or ``error``."""
        value = self._state.get(self._status_key, "idle")
        return _check_status(value)

    @property
    def active_tool(self) -> str | None:
        return _optional_str(self._state.get(self._active_tool_key))

    @property
    def context(self) -> AgentContext | None:
        """The workspace context sent with every request (a fresh object every call)."""
        raw = self._state.get(self._context_key)
        return None if raw is None else AgentContext.model_validate_json(raw)

    def set_status(self, status: ExecutionState) -> None:
        """Change the status; an unknown status is a ``ValueError`` listing the valid ones."""
        self._state[self._status_key] = _check_status(status)

    def set_active_tool(self, name: str | None) -> None:
        self._state[self._active_tool_key] = name

    def set_context(self, context: AgentContext | Mapping[str, Any] | None) -> None:
        """Replace the workspace context (a model or its dictionary form in either spelling)."""
        if context is None:
            self._state[self._context_key] = None
            return
        model = context if isinstance(context, AgentContext) else AgentContext.model_validate(dict(context))
        self._state[self._context_key] = model.model_dump_json(by_alias=True, exclude_none=True)

    def reset(self) -> None:
        """Back to ``idle`` with no active tool; the context (the user's workspace) stays for the next request."""
        self._state[self._status_key] = "idle"
        self._state[self._active_tool_key] = None


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def _check_status(value: object) -> ExecutionState:
    for status in EXECUTION_STATES:
        if value == status:
            return status
    raise ValueError(f"Unknown execution status {value!r}; expected one of: {', '.join(EXECUTION_STATES)}")
