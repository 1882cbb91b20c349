"""The project's conversations in the sidebar: search by words said in them, open one; rename, export or
delete the open one. Counts are the user's questions, times on the browser's clock; at most
:data:`MAX_LISTED` are drawn and older ones are found by searching, so a rerun costs the same with 10 or 1,000.
Every switch of conversation draws this list again, so the open one's rename, export and delete are drawn only
while the user has them open (an expander would draw them, collapsed, on every switch).
"""

from __future__ import annotations

import functools
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st

from agent_app.runs.manager import RunManager
from agent_app.storage import CONVERSATION_GONE, Conversation, NotFoundError
from agent_app.ui.chat_history import reset_window
from agent_app.ui.conversation_export import export_file_stem, to_json, to_markdown
from agent_app.ui.formatting import count_of, escape_markdown, local_time
from agent_app.ui.notices import notify, rename_field, render_confirmation, show_notices
from agent_app.ui.page_parts import redraw_chat, redraw_conversations
from agent_app.ui.session_workspace import Workspace
from agent_app.ui.sidebar_control import close_sidebar_on_phone
from agent_app.ui.transcript_view import search_words

MAX_LISTED = 20
_SEARCH = "conversations_search"
_RENAME = "conversations_rename"
_CONFIRM_DELETE = "conversations.confirm_delete"
_MANAGE = "conversations_manage"
"""The button that shows or hides the open conversation's rename, export and delete."""
_MANAGING = "conversations.managing"
"""The conversation whose rename, export and delete are shown (another one open: they are hidden)."""
_PICKED = "conversations.picked"
"""Set when a conversation was picked: on a phone the sidebar then closes (it covers the chat)."""


def browser_zone() -> tuple[tzinfo, str]:
    """The browser's time zone and a suffix for times shown in it ("" when known, " UTC" when not)."""
    name = st.context.timezone
    if name:
        try:
            return ZoneInfo(name), ""
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return UTC, " UTC"


def conversation_label(conversation: Conversation, zone: tzinfo, suffix: str) -> str:
    """``"Harbour interview — 3 questions · 30 Nov 2026, 14:05"``."""
    title = escape_markdown(conversation.title) or "Untitled"
    when = local_time(conversation.updated_at, zone) + suffix
    return f"{title} — {count_of(conversation.question_count, 'question')} · {when}"


# --- callbacks ------------------------------------------------------------------------------------


def _open(workspace: Workspace, conversation_id: str) -> None:
    """Open the picked conversation; one deleted meanwhile (by another tab or process) is said so, in words."""
    try:
        workspace.open_conversation(conversation_id)
    except NotFoundError:
        notify(workspace.state, "error", CONVERSATION_GONE, "conversation")
    else:
        reset_window(workspace.state)
        workspace.state[_CONFIRM_DELETE] = None
        workspace.state[_PICKED] = True
    redraw_chat()


def _toggle_manage(workspace: Workspace, conversation_id: str) -> None:
    """Show or hide the open conversation's rename, export and delete (a question asked there goes too)."""
    shown = workspace.state.get(_MANAGING) == conversation_id
    workspace.state[_MANAGING] = None if shown else conversation_id
    workspace.state[_CONFIRM_DELETE] = None


def _ask_delete(workspace: Workspace, conversation_id: str | None) -> None:
    workspace.state[_CONFIRM_DELETE] = conversation_id


def _delete(workspace: Workspace, runs: RunManager | None, conversation_id: str) -> None:
    workspace.delete_conversation(conversation_id, runs)
    reset_window(workspace.state)
    redraw_chat()


# --- drawing --------------------------------------------------------------------------------------


def render_conversation_search() -> None:
    """The section's title and search box, drawn with the page, outside the list's part: a switch of
    conversation does not draw them again (a text box reads the whole session state each time it is drawn);
    a search redraws the list alone."""
    st.subheader("Conversations", divider="gray")
    st.text_input(
        "Search conversations",
        key=_SEARCH,
        placeholder="Words from a conversation",
        icon=":material/search:",
        label_visibility="collapsed",
        on_change=redraw_conversations,
    )


def render_conversations(workspace: Workspace, runs: RunManager | None) -> None:
    """The list below :func:`render_conversation_search` (see the module docstring); ``runs`` stops a deleted
    chat's run."""
    zone, suffix = browser_zone()
    words = search_words(str(st.session_state.get(_SEARCH) or ""))
    project_id = workspace.project().id
    if words:
        found = workspace.storage.search_conversations(project_id, words, limit=MAX_LISTED + 1)
        more = "+" if len(found) > MAX_LISTED else ""
        st.caption(f"{count_of(min(len(found), MAX_LISTED), 'conversation')}{more} with those words")
    else:
        found = workspace.storage.list_conversations(project_id, limit=MAX_LISTED + 1)
    current_id = workspace.conversation_id
    for conversation in found[:MAX_LISTED]:
        is_open = conversation.id == current_id
        st.button(
            conversation_label(conversation, zone, suffix),
            key=f"conversations_open_{conversation.id}",
            on_click=_open,
            args=(workspace, conversation.id),
            type="secondary" if is_open else "tertiary",  # the open one framed, as clickable as the rest
            icon=":material/chat:" if is_open else None,
        )
    if not words and len(found) > MAX_LISTED:
        st.caption(f"Only the {MAX_LISTED} most recent are listed: search to find older ones.")
    if not found and not words:
        st.caption("No conversations yet: ask the assistant something.")
    current = next((c for c in found if c.id == current_id), None)
    if current is None and current_id is not None:
        current = workspace.storage.get_conversation(current_id)
    _render_open_conversation(workspace, runs, current, zone)
    show_notices(workspace.state, "conversation")
    if workspace.state.pop(_PICKED, False):
        close_sidebar_on_phone()


def _render_open_conversation(
    workspace: Workspace, runs: RunManager | None, conversation: Conversation | None, zone: tzinfo
) -> None:
    """The button that shows the open conversation's rename, export and delete, and them while shown; shown
    for one conversation only, so they are hidden again once another one is open."""
    shown = conversation is not None and workspace.state.get(_MANAGING) == conversation.id
    if not shown:
        workspace.state.pop(_MANAGING, None)
    if conversation is None:
        return
    st.button(
        "Rename, export or delete this chat",
        key=_MANAGE,
        type="tertiary",
        icon=":material/expand_less:" if shown else ":material/edit_note:",
        on_click=_toggle_manage,
        args=(workspace, conversation.id),
    )
    # One slot, always drawn: hidden, it is drawn empty, which replaces the panel in the browser within the
    # same run (a panel left out of the run would wait for the browser to clear it as stale, and a browser
    # busy with the next fragment's run was seen keeping it).
    slot = st.empty()
    if not shown:
        return
    with slot.container(border=True):
        rename = functools.partial(workspace.storage.rename_conversation, conversation.id)
        rename_field(
            workspace.state, _RENAME, "conversation", rename, redraw_chat, placeholder=conversation.title or "Untitled"
        )
        messages = workspace.chat.messages
        stem = export_file_stem(conversation.title)
        with st.container(horizontal=True, gap="small"):
            st.download_button(
                "Markdown",
                data=functools.partial(to_markdown, conversation.title, messages, zone),  # written on click
                file_name=f"{stem}.md",
                mime="text/markdown",
                key="conversations_export_md",
                icon=":material/download:",
                on_click="ignore",
            )
            st.download_button(
                "JSON",
                data=functools.partial(to_json, conversation, conversation.title, messages),
                file_name=f"{stem}.json",
                mime="application/json",
                key="conversations_export_json",
                icon=":material/download:",
                on_click="ignore",
            )
        if workspace.state.get(_CONFIRM_DELETE) != conversation.id:
            st.button(
                "Delete this chat",
                key="conversations_delete",
                icon=":material/delete:",
                on_click=_ask_delete,
                args=(workspace, conversation.id),
            )
            return
        render_confirmation(
            workspace.state,
            confirm_key=_CONFIRM_DELETE,
            section="conversation",
            question=f"Delete “{escape_markdown(conversation.title) or 'Untitled'}” and its "
            f"{count_of(conversation.message_count, 'message')}? This cannot be undone.",
            yes_label="Yes, delete",
            key="conversations_delete",
            action=functools.partial(_delete, workspace, runs, conversation.id),
        )
