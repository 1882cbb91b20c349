"""A Copy button for a chat message: the message's text goes to the clipboard, in the browser, with no rerun.

Streamlit has no copy action for chat messages (only code blocks carry one), so this is a small component of
our own: fixed script and markup, the message text passed as data and only ever written to the clipboard or
set as a ``textContent`` (never parsed as HTML). ``navigator.clipboard`` needs a secure page (https or
localhost); elsewhere a hidden text area and ``execCommand("copy")`` do the same.
"""

from __future__ import annotations

import streamlit as st

_JS = """
export default function (component) {
  const { data, parentElement } = component;
  let button = parentElement.querySelector("button");
  if (!button) {
    button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.addEventListener("click", async () => {
      const text = button.copyText || "";
      let done = false;
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(text);
          done = true;
        }
      } catch (error) { done = false; }
      if (!done) {
        const area = document.createElement("textarea");
        area.value = text;
        area.setAttribute("readonly", "");
        area.style.position = "fixed";
        area.style.opacity = "0";
        document.body.appendChild(area);
        area.select();
        done = document.execCommand("copy");
        area.remove();
      }
      button.textContent = done ? "Copied" : "Copy failed";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    parentElement.appendChild(button);
  }
  button.copyText = data.text;
  button.setAttribute("aria-label", data.label);
  button.title = data.label;
  if (button.textContent !== "Copied") { button.textContent = "Copy"; }
}
"""

_CSS = """
button.copy {
  font: inherit; font-size: 0.8rem; color: var(--st-text-color); opacity: 0.65; background: none;
  border: none; padding: 0.1rem 0.25rem; cursor: pointer;
}
button.copy:hover, button.copy:focus-visible { opacity: 1; text-decoration: underline; }
"""

_ELEMENT = st.components.v2.component("agent_app.copy_button", js=_JS, css=_CSS)


def copy_button(text: str, *, key: str) -> None:
    """Draw a small "Copy" button that puts ``text`` on the clipboard."""
    _ELEMENT(key=key, data={"text": text, "label": "Copy this message"}, width="content")
