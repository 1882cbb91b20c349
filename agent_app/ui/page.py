"""The workspace page (placeholder until the page issue lands)."""

import streamlit as st

st.title("Agent Session Shell")
