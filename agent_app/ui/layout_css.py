"""Where the chat sits on a screen: its input always in view without scrolling, at a desktop and a phone size.

Streamlit places a chat input inside a column where the column ends, below everything above it: at
1440×900 that was the bottom edge, on a phone two screens down under the player and the transcript. This
stylesheet (our own fixed text, keyed to the ``st-key-…`` classes Streamlit gives keyed containers) makes:

* wide screens: the chat column sticky beside the player, its history as tall as the window allows, so
  the input stays at the bottom of the window however far the transcript is scrolled;
* narrow screens (Streamlit stacks columns below 640 px): the chat first, its history sized to the
  window, so the input is on the first screen; the player and the transcript follow below it;
* the chat's title on one line (cut with an ellipsis, whole in its help tooltip): a long first question no longer
  pushes the input below the window;
* the closed sidebar's toggle labelled with what it opens (Streamlit draws an arrow alone);
* the refresh timers (:mod:`~agent_app.ui.refresh_timer`) out of the layout: drawn as nothing, they would
  still take a gap.
"""

from __future__ import annotations

import streamlit as st

CHAT_COLUMN_KEY = "chat_column"
CHAT_HISTORY_KEY = "chat_history"
CHAT_TITLE_KEY = "chat_title"
TIMER_KEY_SUFFIX = "_refresh_timer"

_COLUMN = f'div[data-testid="stColumn"]:has(.st-key-{CHAT_COLUMN_KEY})'
_HISTORY = f'div[data-testid="stLayoutWrapper"]:has(> .st-key-{CHAT_HISTORY_KEY})'
"""Streamlit sizes a fixed-height container by the wrapper around the keyed block, as a flex basis."""

_CSS = f"""<style>
@media (min-width: 641px) {{
  {_COLUMN} {{ position: sticky; top: 3.75rem; align-self: flex-start; }}
  {_HISTORY}, .st-key-{CHAT_HISTORY_KEY} {{ --chat-height: max(16rem, calc(100dvh - 17rem)); }}
}}
@media (max-width: 640px) {{
  {_COLUMN} {{ order: -1; }}
  {_HISTORY}, .st-key-{CHAT_HISTORY_KEY} {{ --chat-height: max(12rem, calc(100dvh - 23rem)); }}
}}
.st-key-{CHAT_TITLE_KEY} h3 {{ white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
.stElementContainer[class*="{TIMER_KEY_SUFFIX} "] {{ display: none; }}
[data-testid="stExpandSidebarButton"]::after {{
  content: "Projects & chats"; margin-left: 0.25rem; font-size: 0.875rem; white-space: nowrap;
}}
{_HISTORY}, .st-key-{CHAT_HISTORY_KEY} {{
  height: var(--chat-height) !important; flex: 0 0 var(--chat-height) !important; max-height: var(--chat-height);
}}
</style>"""


def apply_layout() -> None:
    """Add the stylesheet to the page (drawn as nothing)."""
    st.html(_CSS)
