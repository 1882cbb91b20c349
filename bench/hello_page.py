"""The baseline page of ``bench_page_load``: Streamlit's hello world with a chat input and a button that
reruns it (what a page costs Streamlit itself, before any of ours)."""

from __future__ import annotations

import streamlit as st

st.title("Hello world")
count = int(st.session_state.get("hello.count", 0))
if st.button("Again"):
    count += 1
    st.session_state["hello.count"] = count
st.write(f"Pressed {count} times")
st.chat_input("Say something")
