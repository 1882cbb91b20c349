"""The floor of ``bench_page_load``'s conversation switch: the least a switch can draw with Streamlit's keyed
fragments. A chat part (a title, 13 messages as one HTML block, the chat input) and a list part (two buttons)
in the sidebar, whose callback reruns both, as our page's switch does; what it costs over a hello-world rerun
is Streamlit's own fragment machinery, not our page. At ``?history=element`` the 13 messages are drawn by our
chat's history element (:mod:`agent_app.ui.history_element`, one bubble each) instead: what that one element
adds to a switch."""

from __future__ import annotations

import html

import streamlit as st

from agent_app.ui.history_element import Bubble, render_bubbles

CHATS = {
    title: [f"Message {number} of {title.split()[0].lower()}" for number in range(12)] + [f"Answer in {title}"]
    for title in ("First chat", "Second chat")
}
_OPEN = "floor.open"
_CHAT, _LIST = "floor_chat", "floor_list"


def _pick(title: str) -> None:
    st.session_state[_OPEN] = title
    st.rerun([_CHAT, _LIST])


def _open_title() -> str:
    return str(st.session_state.get(_OPEN, "First chat"))


def _chat_part() -> None:
    title = _open_title()
    st.subheader(title, anchor=False)
    if st.query_params.get("history") == "element":
        bubbles = [Bubble(key=f"{title}-{n}", html=f"<p>{html.escape(m)}</p>") for n, m in enumerate(CHATS[title])]
        render_bubbles(bubbles, key="floor_history")
    else:
        st.html("".join(f"<div><p>{html.escape(message)}</p></div>" for message in CHATS[title]))
    st.chat_input("Say something")


def _list_part() -> None:
    for title in CHATS:
        st.button(
            f"{title} —",
            key=f"floor_pick_{title}",
            on_click=_pick,
            args=(title,),
            type="primary" if title == _open_title() else "secondary",
        )


st.set_page_config(page_title="floor", layout="wide")
st.fragment(_chat_part, key=_CHAT)()
with st.sidebar:
    st.fragment(_list_part, key=_LIST)()
