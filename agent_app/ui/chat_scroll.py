"""Back to the newest message after this tab sends: the chat box scrolls down and follows the run again.

Streamlit's container autoscroll (``st.container(height=..., autoscroll=True)``) stops following once the
user scrolls up — to open a tool card, say — and offers no call to resume, so the next question's status
and answer drew below the visible part of the box. A question just sent is where the user looks next:
after this tab starts a run (a question, Retry, Edit, Regenerate) the chat draws our own fixed script (no
model or user text in it) that scrolls the box to the bottom and fires a scroll event, from which
Streamlit's autoscroll reads "at the bottom" and follows new content again. It keeps at it for
:data:`FOLLOW_MS` (a busy machine may draw the new messages late); a wheel, touch or press in the chat
stops it, so a user who scrolls keeps their place. The script is offered on every redraw for
:data:`OFFER_SECONDS` (a quick redraw can replace it before the browser ran it) and runs once per start.
"""

from __future__ import annotations

import time
import uuid

import streamlit as st

from agent_app.session_stores import SessionState
from agent_app.ui.layout_css import CHAT_HISTORY_KEY

_START_ID = "chat.scroll_start_id"
_UNTIL = "chat.scroll_until"
OFFER_SECONDS = 4.0
FOLLOW_MS = 3000
_SCRIPT = """<script>
(() => {
  const token = '__TOKEN__';
  if (window.chatScrolledFor === token) { return; }  // offered again by a later redraw: it ran already
  window.chatScrolledFor = token;
  const selector = '.st-key-__KEY__';
  const events = ['wheel', 'touchstart', 'pointerdown'];
  let moved = false;
  const stop = (event) => { moved = moved || Boolean(event.target.closest && event.target.closest(selector)); };
  events.forEach((name) => window.addEventListener(name, stop, { capture: true, passive: true }));
  const until = Date.now() + __FOLLOW_MS__;
  const toNewest = () => {
    const box = document.querySelector(selector);  // looked up each time: a rerun may draw a new one
    if (box && !moved && box.scrollHeight - box.scrollTop - box.clientHeight > 1) {
      box.scrollTop = box.scrollHeight;
      box.dispatchEvent(new Event('scroll'));  // read at the bottom: the container follows new content again
    }
    if (moved || Date.now() > until) {
      events.forEach((name) => window.removeEventListener(name, stop, { capture: true }));
    } else {
      setTimeout(toNewest, 100);
    }
  };
  toNewest();
})();
</script>"""


def scroll_script(token: str) -> str:
    """The script for one start (``token``: a fresh hex id, never user text)."""
    return (
        _SCRIPT.replace("__TOKEN__", token)
        .replace("__KEY__", CHAT_HISTORY_KEY)
        .replace("__FOLLOW_MS__", str(FOLLOW_MS))
    )


def scroll_to_newest(state: SessionState) -> None:
    """Ask the next redraws to bring the chat to its newest message (called when this tab starts a run)."""
    state[_START_ID] = uuid.uuid4().hex
    state[_UNTIL] = time.monotonic() + OFFER_SECONDS


def render_scroll(state: SessionState) -> None:
    """Offer the script while a start is recent (drawn as nothing)."""
    if time.monotonic() < float(state.get(_UNTIL, 0.0)):
        # A different comment each time, so the browser runs the script again after each redraw.
        body = f"{scroll_script(str(state.get(_START_ID)))}<!-- {time.monotonic_ns()} -->"
        st.html(body, unsafe_allow_javascript=True)
