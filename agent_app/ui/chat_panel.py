"""The chat: header (New chat, past conversations), history, live run, error with Retry, input.

A submission is queued by the input's callback and run *in the same script run*, after the input
has been redrawn disabled, so "the input waits" while the orchestrator works; the run ends with
``st.rerun()`` to draw the finished turn with collapsed tool cards. Retry runs the orchestrator
again on the kept history: the user's message was written when it was sent and is never dropped.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass

import streamlit as st

from agent_app.orchestrator import Orchestrator
from agent_app.registry import ToolRegistry
from agent_app.storage import ProjectMediaLibrary, StorageError
from agent_app.storage.names import title_from
from agent_app.stores import SessionState
from agent_app.types import ChatClient, ChatMessage
from agent_app.ui.chat_errors import describe_chat_error
from agent_app.ui.chat_history import ASSISTANT_AVATAR, USER_AVATAR, render_history, reset_window
from agent_app.ui.conversation_locks import conversation_lock
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.layout_css import CHAT_HISTORY_KEY
from agent_app.ui.live_status import LiveStatus
from agent_app.ui.markdown_text import typed_markdown
from agent_app.ui.message_actions import TurnActions
from agent_app.ui.recovery import close_unfinished_calls, is_unanswered
from agent_app.ui.rerun_guard import DeferringState, RerunDeferral
from agent_app.ui.session_workspace import Workspace
from agent_app.usage_cost import Prices

_LOGGER = logging.getLogger(__name__)
PROMPT_KEY = "chat_prompt"
NO_MODEL_PLACEHOLDER = "Set up a model to chat: see Assistant in the sidebar"
_PENDING_PROMPT = "chat.pending_prompt"
_PENDING_RETRY = "chat.pending_retry"
_REFOCUS = "chat.refocus"
FOCUS_INPUT_SCRIPT = """<script>
(() => {
  let tries = 0;
  const focus = () => {
    const box = document.querySelector('[data-testid="stChatInputTextArea"]');
    const elsewhere = document.activeElement && document.activeElement !== document.body;
    if (elsewhere && document.activeElement !== box) { return; }  // the user went on somewhere else
    if (box && !box.disabled) { box.focus(); } else if (tries++ < 40) { setTimeout(focus, 50); }
  };
  focus();
})();
</script>"""
"""Our own fixed script (no model or user text in it): the input is disabled while the assistant works,
which drops the keyboard focus to the page; after the answer it goes back, so the next question can be
typed without tabbing through the whole sidebar."""
HISTORY_HEIGHT = 560
BUSY_WAIT_SECONDS = 600.0
"""How long a run waits for another tab's run in the same conversation (a long transcription)."""


@dataclass(frozen=True)
class Assistant:
    """What a run needs besides the workspace: the route client and the enabled tools."""

    client: ChatClient
    registry: ToolRegistry
    prices: Prices | None = None
    """The configured model's prices (``LLM_PRICES``), for the token captions' estimated cost."""


# --- callbacks (run before the script) ------------------------------------------------------------


def _queue_prompt(state: SessionState) -> None:
    text = str(state.get(PROMPT_KEY) or "").strip()
    if text:
        state[_PENDING_PROMPT] = text


def _resend(workspace: Workspace, message_id: str, text: str) -> None:
    """An edited last question: its old turn goes (stored too), the new text is asked; a title made from
    the old text follows the edit."""
    old = next((m.content for m in workspace.chat.messages if m.id == message_id), "")
    conversation_id = workspace.conversation_id
    try:
        conversation = workspace.storage.get_conversation(conversation_id) if conversation_id else None
        if conversation is not None and conversation.title == title_from(old):
            workspace.storage.rename_conversation(conversation.id, title_from(text))
        workspace.drop_from(message_id)
    except (StorageError, OSError) as exc:
        workspace.chat.set_error(f"The conversation could not be saved: {exc}")
        return
    workspace.state[_PENDING_PROMPT] = text


def _regenerate(workspace: Workspace, answer_start_id: str) -> None:
    """The last answer asked again: it goes (stored too), the kept question is answered anew."""
    try:
        workspace.drop_from(answer_start_id)
    except (StorageError, OSError) as exc:
        workspace.chat.set_error(f"The conversation could not be saved: {exc}")
        return
    workspace.state[_PENDING_RETRY] = True


def _queue_retry(state: SessionState) -> None:
    state[_PENDING_RETRY] = True


def _new_chat(workspace: Workspace) -> None:
    workspace.new_chat()
    reset_window(workspace.state)


# --- drawing ----------------------------------------------------------------------------------------


def render_header(workspace: Workspace, messages: list[ChatMessage], asking: str | None = None) -> None:
    """Title of the open conversation (or of the one ``asking`` is starting) and "New chat"; the project's
    other conversations are in the sidebar (:mod:`~agent_app.ui.conversation_list`)."""
    conversation_id = workspace.conversation_id
    current = workspace.storage.get_conversation(conversation_id) if conversation_id is not None else None
    title_col, button_col = st.columns([3, 1], vertical_alignment="center")
    with title_col:
        title = current.title if current is not None and current.title else ""
        title = title or title_from(asking or _first_question(messages))
        st.subheader(escape_markdown(title) if title else "New chat", anchor=False)
    with button_col:
        st.button(
            "New chat",
            key="chat_new",
            icon=":material/add_comment:",
            on_click=_new_chat,
            args=(workspace,),
            disabled=workspace.conversation_id is None and not messages,
            width="stretch",
        )


def _first_question(messages: list[ChatMessage]) -> str:
    """What titles a new conversation: its first user message."""
    return next((m.content for m in messages if m.role == "user"), "")


def _run(session: Workspace, assistant: Assistant, prompt: str | None) -> None:
    """Take the queued request, append the user's message (if any) and run the orchestrator with a
    live status box; then rerun the page (with any click made meanwhile, see :mod:`rerun_guard`)."""
    deferral = RerunDeferral()
    # The run's view of the session: the same session state and storage, but a click meeting any
    # access is held until the run is over instead of cutting it short.
    workspace = Workspace(DeferringState(session.state, deferral), session.storage)
    workspace.state.pop(_PENDING_PROMPT, None)
    workspace.state.pop(_PENDING_RETRY, None)
    chat = workspace.chat
    chat.set_error(None)  # a new attempt: the last one's error no longer applies
    lock = _wait_for_other_tabs(workspace, prompt, deferral)
    try:
        _ask(workspace, assistant, prompt, deferral)
    finally:
        lock.release()
    workspace.state[_REFOCUS] = True
    deferral.release()
    st.rerun()


def _wait_for_other_tabs(workspace: Workspace, prompt: str | None, deferral: RerunDeferral) -> threading.Lock:
    """The open conversation's run lock, acquired: waiting while another tab runs in it, then catching
    up with what that run stored. A chat not stored yet is nobody else's (a private lock). After
    :data:`BUSY_WAIT_SECONDS` the other run is taken to be stuck and this one goes ahead anyway."""
    conversation_id = workspace.conversation_id
    if conversation_id is None:
        private = threading.Lock()
        private.acquire()
        return private
    lock = conversation_lock(conversation_id)
    if not lock.acquire(blocking=False):
        note = None
        with deferral.hold():
            note = st.empty()
            with note.container():
                if prompt is not None:  # the user's message, so it does not seem lost while waiting
                    with st.chat_message("user", avatar=USER_AVATAR):
                        st.markdown(typed_markdown(prompt))
                with st.chat_message("assistant", avatar=ASSISTANT_AVATAR):
                    st.caption("Waiting for the answer another tab is getting in this conversation…")
        if not lock.acquire(timeout=BUSY_WAIT_SECONDS):
            _LOGGER.warning(
                "Conversation %s: another run held it for %.0f s; going ahead", conversation_id, BUSY_WAIT_SECONDS
            )
            lock = threading.Lock()
            lock.acquire()
        if note is not None:
            with deferral.hold():
                note.empty()
    workspace.catch_up()
    return lock


def _ask(workspace: Workspace, assistant: Assistant, prompt: str | None, deferral: RerunDeferral) -> None:
    """Append the user's message (if any) and run the orchestrator with a live status box."""
    chat = workspace.chat
    try:
        close_unfinished_calls(chat)  # before the new message: results must follow their calls
        if prompt is not None:
            # Into the session first: if storage fails, the message stays on screen for Retry.
            chat.add_message(ChatMessage(role="user", content=prompt))
        workspace.ensure_conversation(_first_question(chat.messages))
    except (StorageError, OSError) as exc:
        chat.set_error(f"The conversation could not be saved: {exc}")
    if prompt is None and chat.error is None and not is_unanswered(chat.messages):
        return  # a Retry whose only failure was saving the answer: now saved, nothing to ask again
    with deferral.hold():
        if prompt is not None:
            with st.chat_message("user", avatar=USER_AVATAR):
                st.markdown(typed_markdown(prompt))
    if chat.error is None:
        workspace.agent.set_context(workspace.context())
        box = None
        for _ in range(3):  # a held request fails the call that met it; the next call goes through
            with deferral.hold(), st.chat_message("assistant", avatar=ASSISTANT_AVATAR):
                box = st.status("Asking the assistant…", expanded=True)
            if box is not None:
                break
        orchestrator = Orchestrator(
            assistant.client,
            assistant.registry,
            chat,
            workspace.agent,
            media=ProjectMediaLibrary(workspace.storage, workspace.project().id),
            data_dir=workspace.storage.data_dir,
            listener=LiveStatus(box, deferral),
        )
        orchestrator.run()


def render_chat(workspace: Workspace, assistant: Assistant | None) -> None:
    """The chat column. ``assistant`` is ``None`` when no model is configured: the input says so and
    sends nothing (the sidebar names the missing settings, once)."""
    state = workspace.state
    if assistant is None:  # nothing could answer: a request is never queued
        state.pop(_PENDING_PROMPT, None)
        state.pop(_PENDING_RETRY, None)
    workspace.catch_up()  # another tab may have added to this conversation
    messages = workspace.chat.messages
    # Read, not taken: if a click reruns the page before the run starts, the request survives.
    pending = state.get(_PENDING_PROMPT)
    prompt = None if pending is None else str(pending)
    render_header(workspace, messages, prompt)
    retry = bool(state.get(_PENDING_RETRY, False))
    running = assistant is not None and (prompt is not None or retry)
    history = st.container(height=HISTORY_HEIGHT, border=False, key=CHAT_HISTORY_KEY, autoscroll=True)
    st.chat_input(
        NO_MODEL_PLACEHOLDER
        if assistant is None
        else "The assistant is working…"
        if running
        else "Ask about your media…",
        key=PROMPT_KEY,
        on_submit=_queue_prompt,
        args=(state,),
        disabled=running or assistant is None,
    )
    with history:
        if not messages and not running:
            st.caption(
                "Ask the assistant about the project's media — for example “What is said in this clip?”. "
                "It knows the assets in the sidebar by name and the playhead position."
            )
        question_id, answer_id = TurnActions.of(messages)
        actions = TurnActions(
            last_question_id=question_id,
            answer_start_id=answer_id,
            on_resend=functools.partial(_resend, workspace),
            on_regenerate=functools.partial(_regenerate, workspace),
            busy=running or assistant is None,
        )
        render_history(state, messages, assistant.prices if assistant is not None else None, actions)
        if running and assistant is not None:
            _run(workspace, assistant, prompt)  # ends with a rerun
        _render_notices(workspace, messages)
        if state.pop(_REFOCUS, False):
            st.html(FOCUS_INPUT_SCRIPT, unsafe_allow_javascript=True)


def _render_notices(workspace: Workspace, messages: list[ChatMessage]) -> None:
    """The last run's error, or a note that it stopped early, with Retry (under the last message)."""
    error = workspace.chat.error
    unanswered = is_unanswered(messages)
    conversation_id = workspace.conversation_id
    if error is None and unanswered and conversation_id is not None and conversation_lock(conversation_id).locked():
        # Not interrupted: another tab's run is still going (its messages so far were caught up with).
        st.info(
            "The assistant is answering in another tab; its answer shows here on your next click.",
            icon=":material/sync:",
        )
        return
    if error is not None:
        st.error(describe_chat_error(error, workspace.chat.error_kind), icon=":material/error:")
    elif unanswered:
        st.warning("The assistant did not finish answering (the run was interrupted).", icon=":material/pause:")
    if error is not None or unanswered:
        st.button("Retry", key="chat_retry", icon=":material/refresh:", on_click=_queue_retry, args=(workspace.state,))
