"""The sidebar opened or closed for the user, by our own fixed scripts (no user or model text in them):
on a phone it covers the chat, so it closes once a conversation is picked; the "set up a model" hint opens
it at the Assistant section, where the missing settings are named."""

from __future__ import annotations

import time

import streamlit as st

ASSISTANT_SECTION_KEY = "assistant_settings"
PHONE_WIDTH = 768
"""Below this window width Streamlit draws the sidebar over the page (its ``md`` breakpoint)."""

_CLOSE_ON_PHONE = f"""<script>
(() => {{
  if (window.innerWidth >= {PHONE_WIDTH}) {{ return; }}
  const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
  if (button) {{ button.click(); }}
}})();
</script>"""

_OPEN_AT_ASSISTANT = f"""<script>
(() => {{
  let tries = 0;
  const show = () => {{
    const expand = document.querySelector('[data-testid="stExpandSidebarButton"]');
    if (expand) {{ expand.click(); }}
    const section = document.querySelector('.st-key-{ASSISTANT_SECTION_KEY}');
    const box = section && section.getBoundingClientRect();
    if (box && box.width > 0 && box.right > 0 && box.left >= 0) {{
      section.scrollIntoView({{ block: 'center' }});
    }} else if (tries++ < 100) {{ setTimeout(show, 50); }}
  }};
  show();
}})();
</script>"""


def _run_script(script: str) -> None:
    # A different comment each time, so the browser runs the script again when it is drawn again.
    st.html(f"{script}<!-- {time.monotonic_ns()} -->", unsafe_allow_javascript=True)


def close_sidebar_on_phone() -> None:
    """Close the sidebar if it covers the page (a phone-sized window); on a wide screen it stays."""
    _run_script(_CLOSE_ON_PHONE)


def open_sidebar_at_assistant() -> None:
    """Open the sidebar (if closed) and scroll to its Assistant section."""
    _run_script(_OPEN_AT_ASSISTANT)
