"""The floor of ``bench_page_load``'s page load: the elements our page draws on the bench's small case, the
same kinds in the same containers and fragments (a keyed chat part with the idle watch inside it, a keyed
list part, our three components with their own script and style), drawn from constants: no settings, no
storage, no Markdown, no media fetched (the player plays silence from a ``data:`` address). What it costs over
hello world is what Streamlit charges for a page with that much on it, before any of our work.

The element list follows what our page sends on that load (its deltas, recorded once with a hook on
``ScriptRunContext.enqueue``); a change to the page's layout should be copied here.
"""

from __future__ import annotations

import base64
import io
import wave

import streamlit as st

from agent_app.types import MediaAsset
from agent_app.ui.history_element import Bubble, render_bubbles
from agent_app.ui.layout_css import apply_layout
from agent_app.ui.live_turn import WATCH_SECONDS
from agent_app.ui.player_element import media_player
from agent_app.ui.refresh_timer import render_refresh_timer
from agent_app.ui.transcript_element import PageActions, transcript_page

_SENTENCE = "so the tomatoes go in first and then we let them simmer for a while"
_WORDS = _SENTENCE.split(" ")
_BUBBLES = [
    Bubble(
        key=f"m{number}",
        html=f"<div class='bubble'><p>{_SENTENCE} ({number}).</p>"
        f"<ul><li>{' '.join(_WORDS[:6])}</li><li>{' '.join(_WORDS[6:])}</li></ul></div>" * 3,
        copy_text=_SENTENCE,
    )
    for number in range(13)
]
_STARTS_MS = [index * 4000 for index in range(17)]
_ROWS = [
    {
        "index": index,
        "time": f"0:{index * 4:02d}",
        "start": start_ms,
        "end": start_ms + 3900,
        "speaker": "Speaker 1",
        "edited": False,
        "words": [[start_ms + n * 250, start_ms + n * 250 + 240, word, False] for n, word in enumerate(_WORDS)],
    }
    for index, start_ms in enumerate(_STARTS_MS)
]


def _silence_url() -> str:
    """A tenth of a second of silence as a ``data:`` address: the player loads it without a request (our
    page's player streams its clip from the media route, which is our work, not Streamlit's). 8 kHz 8-bit,
    not ``testsupport.media_factory.tiny_wav``'s 16 kHz 16-bit: its 4 kB address would make the floor's player
    element larger than our page's."""
    sink = io.BytesIO()
    with wave.open(sink, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(1)
        clip.setframerate(8000)
        clip.writeframes(bytes([128]) * 800)
    return "data:audio/wav;base64," + base64.b64encode(sink.getvalue()).decode()


_ASSET = MediaAsset(id="floor-asset", name="clip.mp4", kind="video", duration_ms=48_000)


def _nothing(_value: object = None) -> None:
    """What a click does on the floor: nothing (only drawing is measured)."""


def _watch_part() -> None:
    """The idle watch: our page's looks for a run started elsewhere and draws nothing but its timer."""
    render_refresh_timer(WATCH_SECONDS, name="floor_watch")


def _chat_part() -> None:
    title, new = st.columns([5, 1])
    with title, st.container():
        st.subheader("Small chat", anchor=False)
    new.button("New chat", key="floor_new_chat")
    history = st.container()
    st.chat_input("Ask about your project")  # before the history, as our page's: usable first
    with history:
        render_bubbles(_BUBBLES, key="floor_history")
        st.fragment(_watch_part)()


def _list_part() -> None:
    for title in ("Small chat", "Second chat", "Third chat"):
        st.button(f"{title} —", key=f"floor_pick_{title}", type="primary" if title == "Small chat" else "tertiary")
    st.empty()


st.set_page_config(page_title="load floor", page_icon="🎬", layout="wide")
apply_layout()
left, right = st.columns([5, 6], gap="large")
with right, st.container(key="floor_chat_column"):
    st.fragment(_chat_part, key="floor_chat")()
with st.sidebar:
    st.title("Agent Session Shell", anchor=False)
    st.selectbox("Project", ["Small project", "Other project"], key="floor_project")
    with st.expander("Manage project"):
        st.text_input("Rename", key="floor_rename")
        st.button("Rename project", key="floor_rename_go")
        st.text_input("New project", key="floor_new")
        st.button("Create project", key="floor_create")
        st.button("Delete this project", key="floor_delete")
    st.subheader("Conversations", anchor=False)
    st.text_input("Search conversations", key="floor_search")
    st.fragment(_list_part, key="floor_list")()
    st.subheader("Scenes", anchor=False)
    st.markdown("No scenes yet.")
    with st.expander("New scene"):
        st.text_input("Scene name", key="floor_scene")
        st.button("Add scene", key="floor_scene_go")
    st.subheader("Media", anchor=False)
    st.file_uploader("Add media", accept_multiple_files=True, key="floor_upload")
    with st.container():
        st.markdown("**clip.mp4** · video · 0:48")
        st.caption("1.2 MB")
        with st.container(horizontal=True):
            st.button("Show", key="floor_show")
            st.button("Remove", key="floor_remove")
    with st.container(border=True):
        st.subheader("Assistant", anchor=False)
        st.markdown("Model: **fake-model** (openai-compatible)")
        st.caption("Tools: transcribe_video")
        st.caption("Set up in the secrets or the environment")
with left:
    st.header("Small project", anchor=False)
    st.selectbox("Asset", ["clip.mp4"], key="floor_asset")
    media_player(_silence_url(), _ASSET, start_ms=0, seek_id=0, marks_ms=_STARTS_MS)
    st.number_input("Playhead (seconds)", min_value=0.0, max_value=48.0, key="floor_playhead")
    st.caption("0:00 of 0:48")
    st.subheader("Transcript", anchor=False)
    with st.container(horizontal=True):
        st.selectbox("Language", ["Detect", "English"], key="floor_language")
        st.button("Transcribe", key="floor_transcribe")
    st.container(key="floor_progress")
    st.caption(f"{len(_ROWS)} segments · English")
    with st.container(horizontal=True):
        for name in ("Text", "SRT", "VTT", "JSON"):
            st.download_button(name, data=name, file_name=f"clip.{name.lower()}", key=f"floor_download_{name}")
    st.button("Speakers", key="floor_speakers")
    st.text_input("Search the transcript", key="floor_transcript_search")
    transcript_page("floor_transcript", _ROWS, 0, PageActions(seek=_nothing, edit=_nothing))
