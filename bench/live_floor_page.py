"""The floor of ``bench_live_page``'s watching tab, drawn from constants (no settings, storage or runs).

A fragment that refreshes as our running turn does (our refresh timer, every
:data:`~agent_app.ui.live_turn.LIVE_REFRESH_SECONDS`) and draws what it draws: the question and a growing
answer in our chat's history element, then Stop. What a tab watching it costs the server is what Streamlit
charges for a refresh at that cadence, before any of our work (reading the run, its events, the Markdown).
"""

from __future__ import annotations

import html
import time

import streamlit as st

from agent_app.ui.chat_history import bubble_html
from agent_app.ui.history_element import Bubble, render_bubbles
from agent_app.ui.live_turn import LIVE_REFRESH_SECONDS
from agent_app.ui.refresh_timer import render_refresh_timer

WORD_SECONDS = float(st.query_params.get("word_seconds", "0.06"))
"""One more word this often (the bench passes its streamed answer's pace)."""
_STARTED = "floor.started"


def _live_part() -> None:
    words = int((time.monotonic() - st.session_state[_STARTED]) / WORD_SECONDS)
    answer = html.escape(" ".join(f"w{number:03d}" for number in range(words)))
    render_bubbles(
        [
            Bubble(key="question", html=bubble_html("user", "<p>Stream please</p>")),
            Bubble(key="live", html=bubble_html("assistant", f'<div class="text"><p>{answer}</p></div>')),
        ],
        key="floor_answer",
    )
    st.button("Stop", key="floor_stop", icon=":material/stop_circle:")
    render_refresh_timer(LIVE_REFRESH_SECONDS, name="floor_live")


st.set_page_config(page_title="floor", layout="wide")
st.session_state.setdefault(_STARTED, time.monotonic())
st.fragment(_live_part)()
st.chat_input("Ask about your media…")
