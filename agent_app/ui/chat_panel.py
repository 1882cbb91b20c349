"""The chat: header (New chat, past conversations), history, the live run, notices with Retry, input.

The page never runs the assistant: a submission starts a run on the server
(:class:`~agent_app.runs.manager.RunManager`) and the page draws what storage holds — the
conversation's messages and the run's events. While a run goes, only the running turn refreshes (a
fragment of its own, :mod:`~agent_app.ui.live_turn`), so the player, the transcript, the sidebar and uploads
answer at once; closing the tab does not touch the run, and any tab that opens the conversation (or has it
open) shows it live.

A second question while a run goes is refused, not queued: Stop is beside the live answer, and a question
sent meanwhile, from this tab or one drawn before the run, gets a clear message (storage refuses it, nothing
is written, the question stays in its box; an Edit or Regenerate from such a tab deletes nothing either).
The input stays enabled while a run goes: Streamlit drops what a widget disabled on the server sends, so a
tab sending in the moment before it redraws for the run would lose the question without a word.
Queueing would store the question before the model has answered the one before it, while the next
question usually depends on that answer; Stop then ask is one click.
"""

from __future__ import annotations

import functools
import time

import streamlit as st

from agent_app.errors import ErrorKind
from agent_app.runs.manager import RunManager
from agent_app.runs.models import Run, RunBusyError, TurnChangedError
from agent_app.runs.recovery import is_unanswered
from agent_app.session_stores import SessionState
from agent_app.settings import Prices
from agent_app.storage import StorageError
from agent_app.storage.names import title_from
from agent_app.types import ChatMessage
from agent_app.ui.chat_errors import describe_chat_error
from agent_app.ui.chat_history import (
    answer_start,
    body_html,
    bubble_html,
    footer_bubbles,
    render_history,
    reset_window,
    split_at_last_question,
)
from agent_app.ui.chat_scroll import render_scroll, scroll_to_newest
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.history_element import Bubble, render_bubbles
from agent_app.ui.layout_css import CHAT_HISTORY_KEY, CHAT_TITLE_KEY
from agent_app.ui.live_status import LiveRun, cut_text_bubbles
from agent_app.ui.live_turn import (
    forget_live,
    live_run,
    look_before_reading,
    render_answer,
    render_watch,
    started_here,
)
from agent_app.ui.message_actions import TurnActions
from agent_app.ui.page_parts import redraw_chat
from agent_app.ui.session_workspace import Workspace
from agent_app.ui.sidebar_control import open_sidebar_at_assistant

PROMPT_KEY = "chat_prompt"
PROMPT_PLACEHOLDER = "Ask about your media…"
"""The same while a run goes (the live answer and its Stop say so), so the box is drawn unchanged and what
is typed in it stays."""
NO_MODEL_PLACEHOLDER = "Set up a model to chat"
"""Short enough to fit the box on a phone; the button above it leads to the sidebar's Assistant section."""
RETRY_KEY = "chat_retry"
_UNSAVED = "chat.unsaved_prompt"
_UNSAVED_KEY = "chat_unsaved_bubble"
_STARTED = "chat.started_here"
"""Set when this tab started a run from the chat part: the next draw reruns the whole page (the sidebar lists a
conversation the question created, the player and transcript see the run), as the page did before the chat
became one fragment."""
_SAVE_ERROR = "chat.save_error"
_REFUSED = "chat.refused"
_REFUSED_PROMPT = "chat.refused_prompt"
_FOCUS_UNTIL = "chat.focus_until"
FOCUS_SECONDS = 3.0
"""After a run ends, every redraw for this long offers the focus script again (a last refresh of the chat
part can redraw the input after the first one ran)."""
FOCUS_INPUT_SCRIPT = """<script>
(() => {
  let tries = 0;
  const focus = () => {
    const box = document.querySelector('[data-testid="stChatInputTextArea"]');
    const elsewhere = document.activeElement && document.activeElement !== document.body;
    if (elsewhere && document.activeElement !== box) { return; }  // the user went on somewhere else
    if (box && !box.disabled) { box.focus(); } else if (tries++ < 100) { setTimeout(focus, 50); }
  };
  focus();
})();
</script>"""
"""Our own fixed script (no model or user text in it): after an answer the keyboard focus goes back to the
input (a click on Stop, or the page's redraws while the assistant worked, may have taken it), so the next
question can be typed without tabbing through the whole sidebar."""
HISTORY_HEIGHT = 560


# --- callbacks (run before the script) ------------------------------------------------------------


def _start(
    workspace: Workspace, runs: RunManager, message: ChatMessage | None, replace_from: str | None = None
) -> bool:
    """Start a run (appending ``message``, replacing the last turn from ``replace_from``); whether it started.
    A refusal (a run is live, or another tab changed the turn) or a storage failure is kept to be shown;
    storage decides both in the transaction that would start the run, so nothing is written then."""
    state = workspace.state
    state.pop(_REFUSED, None)
    try:
        conversation_id = workspace.ensure_conversation(message.content if message is not None else "")
        runs.start(conversation_id, workspace.context(), message, replace_from=replace_from)
    except (RunBusyError, TurnChangedError) as exc:
        state[_REFUSED] = [str(exc), isinstance(exc, RunBusyError)]
        workspace.reload_messages()  # what storage holds, not what this tab last drew
        return False
    except (StorageError, OSError) as exc:
        if message is not None and replace_from is None:  # kept on screen for Retry (same message, same id)
            state[_UNSAVED] = message.model_dump_json()
        state[_SAVE_ERROR] = f"The conversation could not be saved: {exc}"
        return False
    state.pop(_UNSAVED, None)
    state.pop(_SAVE_ERROR, None)
    state[_STARTED] = True
    started_here(state)
    if replace_from is not None:
        workspace.reload_messages()  # the replaced branch is gone from storage
    scroll_to_newest(state)
    return True


def _submit(workspace: Workspace, runs: RunManager | None) -> None:
    text = str(workspace.state.get(PROMPT_KEY) or "").strip()
    if text and runs is not None and not _start(workspace, runs, ChatMessage(role="user", content=text)):
        workspace.state[_REFUSED_PROMPT] = text  # back in the box on the next draw, to send once the run ends


def _retry(workspace: Workspace, runs: RunManager) -> None:
    _start(workspace, runs, _unsaved_prompt(workspace.state))


def _unsaved_prompt(state: SessionState) -> ChatMessage | None:
    raw = state.get(_UNSAVED)
    return None if raw is None else ChatMessage.model_validate_json(str(raw))


def _resend(workspace: Workspace, runs: RunManager, message_id: str, text: str) -> bool:
    """An edited last question: its old turn is replaced by the new text (a title made from the old text
    follows the edit); ``False`` when refused, and the editor keeps the text."""
    return _start(workspace, runs, ChatMessage(role="user", content=text), replace_from=message_id)


def _regenerate(workspace: Workspace, runs: RunManager, answer_start_id: str) -> None:
    """The last answer asked again: it is replaced, the kept question is answered anew."""
    _start(workspace, runs, None, replace_from=answer_start_id)


def _new_chat(workspace: Workspace) -> None:
    """An empty conversation; the current one stays stored and listed."""
    workspace.open_conversation(None)
    reset_window(workspace.state)
    redraw_chat()  # and the conversation list, where the one left is no longer the open one


# --- drawing ----------------------------------------------------------------------------------------


def render_header(workspace: Workspace, messages: list[ChatMessage]) -> None:
    """Title of the open conversation and "New chat"; the project's other conversations are in the sidebar
    (:mod:`~agent_app.ui.conversation_list`)."""
    conversation_id = workspace.conversation_id
    current = workspace.storage.get_conversation(conversation_id) if conversation_id is not None else None
    title_col, button_col = st.columns([3, 1], vertical_alignment="center")
    with title_col, st.container(key=CHAT_TITLE_KEY):  # one line, however long (see layout_css)
        title = current.title if current is not None and current.title else ""
        title = title or title_from(_first_question(messages))
        st.subheader(escape_markdown(title) if title else "New chat", anchor=False, help=escape_markdown(title) or None)
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


def _active_run(workspace: Workspace, runs: RunManager) -> Run | None:
    conversation_id = workspace.conversation_id
    return runs.active_run(conversation_id) if conversation_id is not None else None


def render_chat(workspace: Workspace, runs: RunManager | None, prices: Prices | None = None) -> None:
    """The chat column: the header, history, live run, notices and input, drawn together (the chat part: a
    switch or a button in it redraws this alone, see :mod:`~agent_app.ui.page_parts`; inside it, the running
    turn and the watch for a run started elsewhere refresh by themselves, see :mod:`~agent_app.ui.live_turn`).
    ``runs`` is ``None`` when no model is configured: the input says so and sends nothing (the sidebar names
    the missing settings, once); ``prices`` turn the answers' tokens into an estimated cost."""
    if workspace.state.pop(_STARTED, False):
        st.rerun()  # a run started here: the whole page draws it, not the chat part alone
    conversation_id = workspace.conversation_id
    if runs is not None and conversation_id is not None:
        look_before_reading(workspace.state, runs, conversation_id)
    run = _active_run(workspace, runs) if runs is not None else None
    workspace.catch_up()  # another tab, or a run, may have added to this conversation
    render_header(workspace, workspace.chat.messages)
    _chat_body(workspace, runs, prices, run)


def _render_refusal(state: SessionState, run: Run | None) -> None:
    """Why the last start was refused: "still answering" for as long as that run goes (a redraw every
    half second must not take it away before it is read), any other refusal once."""
    refused = state.get(_REFUSED)
    if refused is None:
        return
    text, while_busy = refused
    if not (while_busy and run is not None):
        state.pop(_REFUSED)
    if run is not None or not while_busy:
        st.info(str(text), icon=":material/hourglass_top:")


def _restore_refused_prompt(state: SessionState) -> None:
    """A refused question goes back in the box (sending emptied it) once; from then on the text is the user's
    to change, and the box, drawn unchanged while the run goes and after it, keeps it."""
    refused_prompt = state.pop(_REFUSED_PROMPT, None)
    if refused_prompt is not None:
        state[PROMPT_KEY] = str(refused_prompt)


def _chat_body(workspace: Workspace, runs: RunManager | None, prices: Prices | None, run: Run | None) -> None:
    """History, live run (``run``, as read for this draw), notices and input."""
    state = workspace.state
    messages = workspace.chat.messages
    earlier, turn = split_at_last_question(messages) if run is not None else (messages, [])
    live = live_run(state, runs, run, turn) if runs is not None and run is not None else None
    latest = _latest_run(workspace, runs) if run is None else None
    _sync_stores(workspace, live)
    loading = workspace.chat.loading  # from here on the page draws from its stores
    history = st.container(height=HISTORY_HEIGHT, border=False, key=CHAT_HISTORY_KEY, autoscroll=True)
    _restore_refused_prompt(state)
    st.chat_input(
        NO_MODEL_PLACEHOLDER if runs is None else PROMPT_PLACEHOLDER,
        key=PROMPT_KEY,
        on_submit=_submit,
        args=(workspace, runs),
        disabled=runs is None,  # a send while a run goes is refused by storage, and the question kept
    )
    with history:
        unsaved = _unsaved_prompt(state)
        with st.container():  # one place, so the answer part after it stays where it is (see render_answer)
            if runs is None and st.button("Where to set up a model", key="chat_setup_model", icon=":material/key:"):
                open_sidebar_at_assistant()
            if not messages and not loading and unsaved is None:
                st.caption(
                    "Ask the assistant about the project's media — for example “What is said in this clip?”. "
                    "It knows the assets in the sidebar by name and the playhead position."
                )
            question_id, answer_id = TurnActions.of(earlier)
            actions = (
                TurnActions(
                    last_question_id=question_id,
                    answer_start_id=answer_id,
                    on_resend=functools.partial(_resend, workspace, runs),
                    on_regenerate=functools.partial(_regenerate, workspace, runs),
                    busy=loading,
                )
                if runs is not None
                else None
            )
            answer_from = answer_start(state, workspace.conversation_id, messages)
            answer = render_history(state, earlier, answer_from, prices, actions)
        if run is None:  # after the answer: the text a cut run streamed, one quiet line (none while a run goes)
            cut = cut_text_bubbles(runs, latest) if runs is not None else []
            answer = answer.followed_by([*cut, *footer_bubbles(messages, answer.context, prices)])
        render_answer(workspace, runs, run.id if run is not None else None, answer)
        if unsaved is not None:  # a question that could not be saved stays on screen, for Retry
            bubble = Bubble(key=unsaved.id, html=bubble_html("user", body_html([unsaved], state)))
            render_bubbles([bubble], key=_UNSAVED_KEY)
        if run is None and runs is not None:
            _render_notices(workspace, runs, latest, messages)
            if workspace.conversation_id is not None:
                render_watch(workspace, runs)  # for a run started elsewhere
        _render_refusal(state, run)
        if run is None and forget_live(state):  # the run this page showed is over
            state[_FOCUS_UNTIL] = time.monotonic() + FOCUS_SECONDS
        if time.monotonic() < float(state.get(_FOCUS_UNTIL, 0.0)):
            # A different comment each time, so the browser runs the script again after each redraw.
            st.html(f"{FOCUS_INPUT_SCRIPT}<!-- {time.monotonic_ns()} -->", unsafe_allow_javascript=True)
    render_scroll(state)


def _latest_run(workspace: Workspace, runs: RunManager | None) -> Run | None:
    """The conversation's last run, for how it ended."""
    conversation_id = workspace.conversation_id
    return runs.latest_run(conversation_id) if runs is not None and conversation_id is not None else None


def _sync_stores(workspace: Workspace, live: LiveRun | None) -> None:
    """The session's chat and agent stores filled from the run and its events: what the chat part draws its
    loading state, status and running tool from."""
    if live is None:
        workspace.chat.set_loading(False)
        workspace.agent.reset()
        return
    workspace.chat.set_loading(True)
    workspace.agent.set_status(live.view.status)
    workspace.agent.set_active_tool(live.view.active_tool)


def _render_notices(workspace: Workspace, runs: RunManager, latest: Run | None, messages: list[ChatMessage]) -> None:
    """How the last run (``latest``) ended, when that needs saying: its error, a Stop, or an interruption; with
    Retry. The text a cut run had streamed is drawn above, where its answer would be."""
    save_error = workspace.state.get(_SAVE_ERROR)
    kind: ErrorKind | None = None
    if save_error is not None:
        error: str | None = str(save_error)
    elif latest is not None and latest.state == "error":
        error, kind = latest.error or "The assistant could not answer", latest.error_kind
    else:
        error = None
    workspace.chat.set_error(error, kind)
    error, kind = workspace.chat.error, workspace.chat.error_kind  # drawn from the store, as set
    unanswered = is_unanswered(messages)
    if error is not None:
        st.error(describe_chat_error(error, kind), icon=":material/error:")
    elif latest is not None and latest.state == "stopped":
        st.caption("Stopped." if not unanswered else "Stopped before the assistant answered.")
    elif (latest is not None and latest.state == "interrupted") or (unanswered and messages[-1].role != "user"):
        st.warning("The assistant did not finish answering (the run was interrupted).", icon=":material/pause:")
    elif unanswered:
        # No run was cut and nothing of an answer is stored (the question may date from before a model was
        # configured): it is simply not answered yet.
        st.info("This question has no answer yet.", icon=":material/help:")
    else:
        return
    if error is not None or unanswered or (latest is not None and latest.state == "interrupted"):
        st.button("Retry", key=RETRY_KEY, icon=":material/refresh:", on_click=_retry, args=(workspace, runs))
