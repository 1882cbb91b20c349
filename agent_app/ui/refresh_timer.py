"""The timer of the parts that refresh by themselves (the running turn, the watch for a run started elsewhere,
a transcription's progress): our own element in place of Streamlit's ``st.fragment(run_every=...)``.

Streamlit's ``run_every`` asks for the fragment's rerun on a plain interval, also while another run of the page
is being sent to the browser. When its request lands just after that run's script ended but before the
server had sent all of that run's messages, Streamlit starts a new script runner and drops the old one's
unsent messages: a conversation switch then showed the old conversation's messages under the new one's
entry in the list (seen with busy threads in the server, as a transcription or other sessions make), and a
question typed there went to the conversation the list named. This element asks only once the page has been idle
(Streamlit's script state in the page: ``notRunning``) for :data:`SETTLE_MS`, and not while a press's run may
still be on its way (:data:`INPUT_WAIT_MS`), so every message of the runs before was received.

After a server restart the tab asks for a whole run on reconnecting, as Streamlit does when its last run was a
fragment's (a tick's always is). Our own fixed script: no model or user text is ever part of it.
"""

from __future__ import annotations

import time

import streamlit as st

from agent_app.ui.layout_css import TIMER_KEY_SUFFIX

SETTLE_MS = 100
"""A tick waits until the page has been idle this long: between a callback's run and the keyed rerun it asks
for, the page shows idle for a moment (the server still sending), and a request then is lost as above."""
INPUT_WAIT_MS = 1000
"""After a press or Enter, a tick waits (this long at most) for the run it may have asked for to show: the page
still shows idle while that request is on its way, and a tick sent then loses that run's messages."""

_TIMER_JS = """
let changedAt = -Infinity;  // when Streamlit's script state in this page last changed
let inputAt = -Infinity;  // the last press or Enter: it may have sent a rerun the page does not show yet
let watched = null;
const pressed = () => { inputAt = performance.now(); };
window.addEventListener("pointerdown", pressed, { capture: true, passive: true });
window.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { pressed(); } }, true);
const settled = () => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || !app.dataset.testScriptState) { return true; }
  if (app !== watched) {
    watched = app;
    const seen = () => { changedAt = performance.now(); };
    new MutationObserver(seen).observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  }
  const now = performance.now();
  const awaited = inputAt > changedAt && now - inputAt < __INPUT_WAIT_MS__;  // its run not shown yet
  return app.dataset.testScriptState === "notRunning" && now - changedAt >= __SETTLE_MS__ && !awaited;
};

export default function ({ data, parentElement, setTriggerValue }) {
  const host = parentElement;
  clearTimeout(host.refreshTimer);  // a redraw answers the last tick and sets the next one
  changedAt = Math.max(changedAt, performance.now());  // and says a run is going
  const tick = () => {
    if (!settled()) { host.refreshTimer = setTimeout(tick, 25); return; }
    host.ticks = (host.ticks || 0) + 1;
    host.sentAt = performance.now();
    setTriggerValue("tick", host.ticks);
    host.refreshTimer = setTimeout(tick, data.ms);  // a tick lost on the way is asked again
  };
  // Counted from the last tick, not from this redraw: a refresh costs the interval, not the interval and a run.
  const since = host.sentAt === undefined ? 0 : performance.now() - host.sentAt;
  host.refreshTimer = setTimeout(tick, Math.max(data.ms / 4, data.ms - since));
  return () => clearTimeout(host.refreshTimer);
}
""".replace("__SETTLE_MS__", str(SETTLE_MS)).replace("__INPUT_WAIT_MS__", str(INPUT_WAIT_MS))

_HIDDEN = ":host { display: none; }"
_TIMER = st.components.v2.component("agent_app.refresh_timer", js=_TIMER_JS, css=_HIDDEN)


def _heard() -> None:
    """A tick needs no work of its own: the rerun it causes is the refresh."""


def render_refresh_timer(seconds: float, *, name: str) -> None:
    """Inside a fragment: rerun it ``seconds`` after each draw, once the page is idle (``name``: unique on
    the page)."""
    _TIMER(
        key=name + TIMER_KEY_SUFFIX,
        # ``drawn`` differs on every draw, so the browser sees each redraw (the answer to its tick).
        data={"ms": round(seconds * 1000), "drawn": time.monotonic_ns()},
        on_tick_change=_heard,
        width="stretch",
    )
