"""The floors of ``bench_page_load``'s conversation switch, drawn from constants (no settings, storage or runs).

The bare floor is the least a switch can draw with Streamlit's keyed fragments: a chat part (a title, 13
messages as one HTML block, the chat input) and a list part (two buttons) in the sidebar, whose callback
reruns both, as our page's switch does; what it costs over a hello-world rerun is Streamlit's own fragment
machinery. ``?floor=history`` draws the messages with our chat's history element
(:mod:`agent_app.ui.history_element`, a bubble each) instead: what that one element adds. ``?floor=ours``
draws every element our page's switch draws, as our page draws them (the page's style, the title row with
New chat, the history box with our bubbles, the watch for a run started elsewhere, the list's open-chat
marks and its manage button, the phone script): what our page's elements cost before any of our work.
"""

from __future__ import annotations

import html

import streamlit as st

from agent_app.ui.chat_history import bubble_html
from agent_app.ui.chat_panel import HISTORY_HEIGHT
from agent_app.ui.history_element import Bubble, render_bubbles
from agent_app.ui.layout_css import CHAT_HISTORY_KEY, CHAT_TITLE_KEY, apply_layout
from agent_app.ui.live_turn import WATCH_SECONDS
from agent_app.ui.refresh_timer import render_refresh_timer
from agent_app.ui.sidebar_control import close_sidebar_on_phone

CHATS = {
    title: [f"Message {number} of {title.split()[0].lower()}" for number in range(12)] + [f"Answer in {title}"]
    for title in ("First chat", "Second chat")
}
_OPEN = "floor.open"
_CHAT, _LIST = "floor_chat", "floor_list"
FLOOR = str(st.query_params.get("floor", "bare"))


def _pick(title: str) -> None:
    st.session_state[_OPEN] = title
    st.rerun([_CHAT, _LIST])


def _open_title() -> str:
    return str(st.session_state.get(_OPEN, "First chat"))


def _bubbles(title: str) -> list[Bubble]:
    """A bubble per message, users' and the assistant's in turn, keyed as our history keys them."""
    return [
        Bubble(
            key=f"{title}-{number}",
            html=bubble_html("user" if number % 2 else "assistant", f"<p>{html.escape(message)}</p>"),
            copy_text=message,
        )
        for number, message in enumerate(CHATS[title])
    ]


def _watch() -> None:
    render_refresh_timer(WATCH_SECONDS, name="floor_watch")


def _chat_part() -> None:
    title = _open_title()
    if FLOOR != "ours":
        st.subheader(title, anchor=False)
        if FLOOR == "history":
            render_bubbles(_bubbles(title), key="floor_history")
        else:
            st.html("".join(f"<div><p>{html.escape(message)}</p></div>" for message in CHATS[title]))
        st.chat_input("Say something")
        return
    title_col, button_col = st.columns([3, 1], vertical_alignment="center")
    with title_col, st.container(key=CHAT_TITLE_KEY):
        st.subheader(title, anchor=False, help=title)
    with button_col:
        st.button("New chat", key="floor_new", icon=":material/add_comment:", width="stretch")
    history = st.container(height=HISTORY_HEIGHT, border=False, key=CHAT_HISTORY_KEY, autoscroll=True)
    st.chat_input("Say something", key="floor_prompt")
    with history:
        render_bubbles(_bubbles(title), key="floor_history")
        st.fragment(_watch)()


def _list_part() -> None:
    ours = FLOOR == "ours"
    for title in CHATS:
        is_open = title == _open_title()
        st.button(
            f"{title} —",
            key=f"floor_pick_{title}",
            on_click=_pick,
            args=(title,),
            type=("secondary" if is_open else "tertiary") if ours else ("primary" if is_open else "secondary"),
            icon=":material/chat:" if is_open and ours else None,
        )
    if ours:
        manage = "Rename, export or delete this chat"
        st.button(manage, key="floor_manage", type="tertiary", icon=":material/edit_note:")
        st.empty()
        close_sidebar_on_phone()


st.set_page_config(page_title="floor", layout="wide")
if FLOOR == "ours":
    apply_layout()
st.fragment(_chat_part, key=_CHAT)()
with st.sidebar:
    st.fragment(_list_part, key=_LIST)()
