"""The chat's bubbles as one page element: a Streamlit component (``st.components.v2``) of our own.

Drawing each bubble with Streamlit's elements (a chat message, its Markdown, its captions, a row of
buttons, a Copy component) cost the server about sixty elements and two dozen widgets per conversation
on every load and switch; one element carrying the bubbles' HTML costs one. The HTML is made on the
server (:mod:`~agent_app.ui.chat_html`, everything a model or a user wrote escaped); this element only
sets it, keyed by bubble, and changes a redrawn bubble node by node rather than replacing it, so a click
pressed while the live answer redraws still lands (a tool card the reader opened stays open when its bubble
is redrawn, as the live answer is while it streams, and once it is stored), and
turns clicks into actions: Copy runs in the browser; Edit, Regenerate and "show more" are sent to the
server as one trigger (:class:`HistoryAction`), handled by the chat's callback before the next run.
Our own fixed script and style: no model or user text is ever part of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import streamlit as st

ActionKind = Literal["edit", "regenerate", "more_cards"]
ACTION_KINDS: tuple[str, ...] = get_args(ActionKind)


@dataclass(frozen=True)
class Bubble:
    """One bubble: ``key`` (stable across redraws: the id of its first message), its HTML, its text for Copy."""

    key: str
    html: str
    copy_text: str = ""


@dataclass(frozen=True)
class HistoryAction:
    """A click the server handles: ``kind`` on the message ``target``."""

    kind: ActionKind
    target: str

    @staticmethod
    def parse(value: object) -> HistoryAction | None:
        """The action a trigger carried, or ``None`` for anything else (the browser is not trusted to send
        only what this element's script sends)."""
        if not isinstance(value, dict):
            return None
        kind, target = value.get("kind"), value.get("target")
        if kind not in ACTION_KINDS or not isinstance(target, str) or not target:
            return None
        return HistoryAction(kind=kind, target=target)


_JS = """
const copyText = async (text) => {
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); return true; }
  } catch (error) { /* fall back below */ }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  const done = document.execCommand("copy");
  area.remove();
  return done;
};

const openCalls = new Set();  // tool cards the reader opened (by call), kept open when their bubble is redrawn

// Make ``from`` look like ``to``, node by node, keeping each node that stays: a node replaced between a
// press and its release takes no click (a card's summary while the live answer redraws), and loses its
// text selection. A card's ``open`` is the reader's, never the server's.
const morph = (from, to) => {
  if (from.nodeType !== to.nodeType || from.nodeName !== to.nodeName) { from.replaceWith(to); return; }
  if (from.nodeType !== Node.ELEMENT_NODE) {
    if (from.nodeValue !== to.nodeValue) { from.nodeValue = to.nodeValue; }
    return;
  }
  const keepOpen = from instanceof HTMLDetailsElement;
  for (const { name } of Array.from(from.attributes)) {
    if (!to.hasAttribute(name) && !(keepOpen && name === "open")) { from.removeAttribute(name); }
  }
  for (const { name, value } of Array.from(to.attributes)) {
    if (from.getAttribute(name) !== value) { from.setAttribute(name, value); }
  }
  morphChildren(from, to);
};
const morphChildren = (from, to) => {
  const olds = Array.from(from.childNodes);
  const news = Array.from(to.childNodes);
  news.forEach((child, i) => { if (i < olds.length) { morph(olds[i], child); } else { from.appendChild(child); } });
  olds.slice(news.length).forEach((child) => child.remove());
};

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector("div.history");
  if (!root) {
    root = document.createElement("div");
    root.className = "history";
    root.copyTexts = new Map();
    root.addEventListener("click", async (event) => {
      const button = event.target.closest("button[data-act]");
      if (!button || !root.contains(button) || button.disabled) { return; }
      const act = button.dataset.act;
      if (act === "copy") {
        const done = await copyText(root.copyTexts.get(button.dataset.target) || "");
        button.textContent = done ? "Copied" : "Copy failed";
        setTimeout(() => { button.textContent = "Copy"; }, 1500);
        return;
      }
      button.disabled = true;  // one click, one action (enabled again by the next draw)
      button.dataset.sent = "1";
      root.sendAction({ kind: act, target: button.dataset.target || "" });
    });
    root.addEventListener("toggle", (event) => {  // "toggle" does not bubble: caught on the way down
      const card = event.target;
      if (!(card instanceof HTMLDetailsElement) || !card.dataset.call) { return; }
      if (card.open) { openCalls.add(card.dataset.call); } else { openCalls.delete(card.dataset.call); }
    }, true);
    parentElement.appendChild(root);
  }
  root.sendAction = (value) => setTriggerValue("action", value);
  root.copyTexts.clear();
  const seen = new Map();
  for (const node of Array.from(root.children)) { seen.set(node.dataset.key, node); }
  let previous = null;
  for (const bubble of data.bubbles) {
    root.copyTexts.set(bubble.key, bubble.copy);
    let node = seen.get(bubble.key);
    if (node) {
      seen.delete(bubble.key);
    } else {
      node = document.createElement("div");
      node.dataset.key = bubble.key;
    }
    if (node.drawnHtml !== bubble.html) {
      const drawn = document.createElement("div");
      drawn.innerHTML = bubble.html;
      morphChildren(node, drawn);  // the bubble's own node keeps its key
      node.drawnHtml = bubble.html;
      node.querySelectorAll("details[data-call]").forEach((card) => {
        if (openCalls.has(card.dataset.call)) { card.open = true; }
      });
    }
    const place = previous ? previous.nextSibling : root.firstChild;
    if (node !== place) { root.insertBefore(node, place); }
    previous = node;
  }
  seen.forEach((node) => node.remove());
  root.querySelectorAll("button[data-sent]").forEach((button) => {
    delete button.dataset.sent;
    button.disabled = false;  // a server-disabled button is never sent, so never here
  });
}
"""

_PERSON = (
    "M12 12c2.21 0 4-1.79 4-4s-1.79-4-4-4-4 1.79-4 4 1.79 4 4 4zm0 2c-2.67 0-8 1.34-8 4v2h16v-2c0-2.66-5.33-4-8-4z"
)
_ROBOT = (
    "M20 9V7c0-1.1-.9-2-2-2h-3c0-1.66-1.34-3-3-3S9 3.34 9 5H6c-1.1 0-2 .9-2 2v2c-1.66 0-3 1.34-3 3s1.34 3 3 3v4"
    "c0 1.1.9 2 2 2h12c1.1 0 2-.9 2-2v-4c1.66 0 3-1.34 3-3s-1.34-3-3-3zM7.5 11.5c0-.83.67-1.5 1.5-1.5s1.5.67 1.5 "
    "1.5S9.83 13 9 13s-1.5-.67-1.5-1.5zM16 17H8v-2h8v2zm-1-4c-.83 0-1.5-.67-1.5-1.5S14.17 10 15 10s1.5.67 1.5 "
    "1.5S15.83 13 15 13z"
)
_GEAR = "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm1 15h-2v-6h2v6zm0-8h-2V7h2v2z"


def _icon(path: str) -> str:
    svg = f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24'><path d='{path}'/></svg>"
    return 'url("data:image/svg+xml,' + svg.replace("<", "%3C").replace(">", "%3E").replace("#", "%23") + '")'


_CSS = f"""
:host {{ display: block; }}
.history {{ display: flex; flex-direction: column; gap: 1rem; font-family: var(--st-font, sans-serif);
  color: var(--st-text-color, inherit); line-height: 1.6; }}
.bubble {{ display: flex; gap: 0.75rem; align-items: flex-start; padding: 0.75rem 1rem;
  border-radius: var(--st-base-radius, 0.5rem); }}
.bubble.user {{ background: var(--st-secondary-background-color, rgba(128, 128, 128, 0.08)); }}
.avatar {{ flex: 0 0 2rem; height: 2rem; border-radius: var(--st-base-radius, 0.5rem);
  background: var(--st-secondary-background-color, rgba(128, 128, 128, 0.15)); position: relative; }}
.avatar::after {{ content: ""; position: absolute; inset: 0.35rem; background: var(--st-text-color, currentColor);
  -webkit-mask: var(--icon) center / contain no-repeat; mask: var(--icon) center / contain no-repeat; }}
.user .avatar {{ --icon: {_icon(_PERSON)}; background: var(--st-primary-color, #ff4b4b); }}
.user .avatar::after {{ background: #fff; }}
.assistant .avatar {{ --icon: {_icon(_ROBOT)}; }}
.system .avatar {{ --icon: {_icon(_GEAR)}; }}
.body {{ flex: 1 1 auto; min-width: 0; overflow-wrap: anywhere; }}
.body > :first-child, .text > :first-child {{ margin-top: 0; }}
.text p, .text ul, .text ol, .text pre, .text table, .text blockquote {{ margin: 0 0 0.75rem; }}
.text > :last-child {{ margin-bottom: 0.25rem; }}
.typed {{ white-space: pre-wrap; margin: 0 0 0.25rem; }}
a {{ color: var(--st-link-color, var(--st-primary-color, #0068c9)); }}
code {{ font-family: var(--st-code-font, monospace); font-size: 0.875em; padding: 0.1em 0.25em;
  border-radius: 0.25rem; background: var(--st-secondary-background-color, rgba(128, 128, 128, 0.12)); }}
pre {{ overflow-x: auto; padding: 0.75rem; border-radius: var(--st-base-radius, 0.5rem);
  background: var(--st-secondary-background-color, rgba(128, 128, 128, 0.12)); }}
pre code {{ padding: 0; background: none; }}
table {{ border-collapse: collapse; display: block; overflow-x: auto; }}
th, td {{ border: 1px solid rgba(128, 128, 128, 0.3); padding: 0.25rem 0.5rem; text-align: left; }}
blockquote {{ border-left: 3px solid rgba(128, 128, 128, 0.4); padding-left: 0.75rem; margin-left: 0; }}
.quiet, .status, .cut {{ font-size: 0.875rem; opacity: 0.65; margin: 0.25rem 0; }}
.status {{ opacity: 0.85; }}
.status::before {{ content: ""; display: inline-block; width: 0.7rem; height: 0.7rem; margin-right: 0.45rem;
  border: 2px solid currentColor; border-right-color: transparent; border-radius: 50%;
  animation: spin 0.9s linear infinite; vertical-align: -0.05rem; }}
@keyframes spin {{ to {{ transform: rotate(360deg); }} }}
.progress {{ font-size: 0.875rem; margin: 0.25rem 0; }}
.progress progress {{ width: 100%; height: 0.5rem; accent-color: var(--st-primary-color, #ff4b4b); }}
details.card {{ border: 1px solid rgba(128, 128, 128, 0.3); border-radius: var(--st-base-radius, 0.5rem);
  margin: 0.5rem 0; }}
details.card > summary {{ cursor: pointer; padding: 0.4rem 0.75rem; list-style-position: inside; }}
details.card > summary::marker {{ font-size: 0.8em; }}
details.card .state {{ opacity: 0.7; }}
details.card.failed .state {{ color: var(--st-red-color, #d33); opacity: 1; }}
details.card > div {{ padding: 0 0.75rem 0.5rem; }}
.label {{ font-size: 0.8rem; opacity: 0.65; margin-top: 0.4rem; }}
.fields {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
.error {{ color: var(--st-red-color, #d33); }}
.actions {{ display: flex; gap: 0.5rem; align-items: center; margin-top: 0.25rem; }}
.actions button {{ font: inherit; font-size: 0.8rem; color: inherit; opacity: 0.65; background: none; border: none;
  padding: 0.1rem 0.25rem; cursor: pointer; }}
.actions button:hover:not(:disabled), .actions button:focus-visible {{ opacity: 1; text-decoration: underline; }}
.actions button:disabled {{ cursor: default; opacity: 0.35; }}
"""

_ELEMENT = st.components.v2.component("agent_app.chat_history", js=_JS, css=_CSS)


def render_bubbles(
    bubbles: Sequence[Bubble], *, key: str, on_action: Callable[[HistoryAction], None] | None = None
) -> None:
    """Draw ``bubbles`` as one element; a click on Edit, Regenerate or "show more" calls ``on_action`` (in the
    callback phase, before the page's next run)."""

    def dispatch() -> None:
        action = HistoryAction.parse(st.session_state[key].get("action"))
        if action is not None and on_action is not None:
            on_action(action)

    _ELEMENT(
        key=key,
        data={"bubbles": [{"key": b.key, "html": b.html, "copy": b.copy_text} for b in bubbles]},
        on_action_change=dispatch,
        width="stretch",
    )
