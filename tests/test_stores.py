"""The chat store and the agent store over a plain dict (``st.session_state`` in the app)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent_app.session_stores import AgentStore, ChatStore
from agent_app.types import AgentContext, ChatMessage, MediaAsset, ToolCall, ToolResult


class RecordingPersistence:
    """A ChatPersistence that remembers what it was told (optionally failing on add)."""

    def __init__(self, fail: bool = False) -> None:
        self.added: list[ChatMessage] = []
        self.cleared = 0
        self.fail = fail

    def message_added(self, message: ChatMessage) -> None:
        if self.fail:
            raise OSError("disk full")
        self.added.append(message)

    def messages_cleared(self) -> None:
        self.cleared += 1


# -- Chat Store scenarios --------------------------------------------------------------------------


def test_message_lifecycle() -> None:
    chat = ChatStore({})
    assert chat.messages == []

    stored = chat.add_message({"role": "user", "content": "Hello"})

    assert len(chat.messages) == 1
    assert chat.messages[0].role == "user"
    assert chat.messages[0].content == "Hello"
    assert chat.messages[0] == stored
    assert stored.id and stored.timestamp > 0


def test_error_state_persists_until_cleared() -> None:
    state: dict[str, Any] = {}
    chat = ChatStore(state)
    chat.set_loading(True)

    chat.set_error("API failed")

    assert chat.error == "API failed"
    assert chat.loading is False
    # Still there on the next rerun (a new store over the same session state) and after more messages.
    rerun = ChatStore(state)
    rerun.add_message({"role": "user", "content": "again"})
    assert rerun.error == "API failed"
    rerun.set_error(None)
    assert rerun.error is None


def test_clear_messages_clears_error_and_tells_persistence() -> None:
    persistence = RecordingPersistence()
    chat = ChatStore({}, persistence=persistence)
    chat.add_message({"role": "user", "content": "Hello"})
    chat.set_error("API failed")

    chat.clear_messages()

    assert chat.messages == []
    assert chat.error is None
    assert persistence.cleared == 1


def test_add_message_writes_through_to_persistence() -> None:
    persistence = RecordingPersistence()
    chat = ChatStore({}, persistence=persistence)
    first = chat.add_message({"role": "user", "content": "Hello"})
    second = chat.add_message(ChatMessage(role="assistant", content="Hi"))
    assert [m.id for m in persistence.added] == [first.id, second.id]
    assert persistence.added[1].content == "Hi"


def test_failing_persistence_loses_nothing_from_the_session() -> None:
    chat = ChatStore({}, persistence=RecordingPersistence(fail=True))
    with pytest.raises(OSError, match="disk full"):
        chat.add_message({"role": "user", "content": "Hello"})
    assert [m.content for m in chat.messages] == ["Hello"]


def test_load_messages_replaces_history_without_persisting() -> None:
    persistence = RecordingPersistence()
    chat = ChatStore({}, persistence=persistence)
    chat.add_message({"role": "user", "content": "old"})
    chat.set_error("old error")
    reopened = [ChatMessage(role="user", content="stored"), ChatMessage(role="assistant", content="answer")]

    chat.load_messages(reopened)

    assert chat.messages == reopened
    assert chat.error is None
    assert len(persistence.added) == 1  # only the "old" message, nothing written back


def test_load_messages_refuses_duplicate_ids_and_changes_nothing() -> None:
    chat = ChatStore({})
    chat.add_message({"role": "user", "content": "keep me"})
    twice = ChatMessage(role="user", content="x")
    with pytest.raises(ValueError, match=twice.id):
        chat.load_messages([twice, twice])
    assert [m.content for m in chat.messages] == ["keep me"]


def test_set_persistence_writes_what_was_said_before_it_first() -> None:
    """A message added while nothing was persisting is unsaved: it is written, first, by the next write."""
    chat = ChatStore({})
    chat.add_message({"role": "user", "content": "before"})
    persistence = RecordingPersistence()
    chat.set_persistence(persistence)
    assert chat.persistence is persistence and len(chat.unsaved) == 1
    chat.add_message({"role": "user", "content": "after"})
    assert [m.content for m in persistence.added] == ["before", "after"]
    assert chat.unsaved == []


def test_messages_are_copies_that_cannot_change_the_store() -> None:
    chat = ChatStore({})
    chat.add_message(
        ChatMessage(
            role="tool",
            tool_result=ToolResult(tool_call_id="c1", name="t", result={"segments": [{"text": "hi"}]}),
        )
    )
    copy = chat.messages
    copy.clear()
    first = chat.messages[0]
    assert first.tool_result is not None
    first.tool_result.result["segments"].append({"text": "injected"})
    with pytest.raises(ValidationError, match="frozen"):
        first.content = "changed"  # type: ignore[misc]

    again = chat.messages[0]
    assert again.content == ""
    assert again.tool_result is not None
    assert again.tool_result.result == {"segments": [{"text": "hi"}]}


def test_invalid_message_is_refused_and_nothing_changes() -> None:
    chat = ChatStore({})
    with pytest.raises(ValidationError, match="role"):
        chat.add_message({"role": "wizard", "content": "Hello"})
    with pytest.raises(ValueError, match="already in the conversation"):
        message = chat.add_message({"role": "user", "content": "Hello"})
        chat.add_message(message)
    assert [m.content for m in chat.messages] == ["Hello"]


def test_non_json_message_is_refused_when_added() -> None:
    chat = ChatStore({})
    message = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c", name="t", result=object()))
    with pytest.raises(ValueError, match="serialize"):
        chat.add_message(message)
    assert chat.messages == []


def test_state_survives_a_rerun_and_keys_are_namespaced() -> None:
    state: dict[str, Any] = {"chat.loading": True}
    chat = ChatStore(state)
    assert chat.loading is True  # existing session state is kept, not reset
    chat.add_message({"role": "user", "content": "Hello", "toolCalls": [{"id": "c1", "name": "t", "args": {}}]})
    other = ChatStore(state, key="other")
    other.add_message({"role": "user", "content": "elsewhere"})

    rerun = ChatStore(state)
    assert [m.content for m in rerun.messages] == ["Hello"]
    assert rerun.messages[0].tool_calls == [ToolCall(id="c1", name="t", args={})]
    assert set(state) >= {"chat.messages", "chat.loading", "chat.error", "other.messages"}


def test_foreign_session_state_is_a_clear_error() -> None:
    chat = ChatStore({"chat.messages": ["not", "ours"]})
    with pytest.raises(TypeError, match=r"chat\.messages"):
        _ = chat.messages


# -- Agent Store scenarios -------------------------------------------------------------------------


def test_tool_execution_tracking() -> None:
    agent = AgentStore({})
    assert (agent.status, agent.active_tool) == ("idle", None)

    agent.set_active_tool("echo_context")
    agent.set_status("processing")

    assert agent.active_tool == "echo_context"
    assert agent.status == "processing"


def test_reset_after_completion() -> None:
    agent = AgentStore({})
    context = AgentContext(project_id="p1", media_assets=[MediaAsset(id="a1", name="clip.mp4")])
    agent.set_context(context)
    agent.set_status("processing")
    agent.set_active_tool("echo_context")

    agent.reset()

    assert agent.status == "idle"
    assert agent.active_tool is None
    assert agent.context == context  # the workspace is not part of the run: kept


def test_unknown_status_is_refused_naming_the_valid_ones() -> None:
    agent = AgentStore({})
    with pytest.raises(ValueError, match="idle, sending, processing, responding, error"):
        agent.set_status("thinking")  # type: ignore[arg-type]
    assert agent.status == "idle"


def test_context_accepts_the_wire_form_and_is_copied() -> None:
    state: dict[str, Any] = {}
    agent = AgentStore(state)
    agent.set_context({"projectId": "p1", "playbackTimeMs": 1500, "mediaAssets": [{"id": "a", "name": "a.mp4"}]})
    context = agent.context
    assert context is not None
    assert context.playback_time_ms == 1500
    context.media_assets.clear()

    rerun = AgentStore(state)
    assert rerun.context is not None
    assert [a.id for a in rerun.context.media_assets] == ["a"]
    rerun.set_context(None)
    assert rerun.context is None


def test_a_failed_write_is_retried_first_and_a_later_one_never_lands_before_it() -> None:
    """Issue 9 item 1 at the store: writes are an ordered queue that every later write drains first."""
    persistence = RecordingPersistence()
    chat = ChatStore({}, persistence=persistence)
    chat.add_message({"role": "user", "content": "one"})
    persistence.fail = True
    with pytest.raises(OSError):
        chat.add_message({"role": "user", "content": "two"})
    with pytest.raises(OSError):
        chat.add_message({"role": "assistant", "content": "three"})
    assert [m.content for m in chat.messages] == ["one", "two", "three"]  # all kept in the session
    assert [m.content for m in persistence.added] == ["one"] and len(chat.unsaved) == 2
    persistence.fail = False
    chat.add_message({"role": "user", "content": "four"})
    assert [m.content for m in persistence.added] == ["one", "two", "three", "four"]
    assert chat.unsaved == [] and chat.save_unsaved() == 0
