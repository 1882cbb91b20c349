"""The workspace page script: what ``st.App("agent_app/ui/page_script.py")`` in ``app.py`` runs per interaction.

Streamlit executes this file as a script, not as a module of the package: under ``streamlit run
app.py`` the repository root is on ``sys.path`` (it is ``app.py``'s folder), but a runner given this
file directly (``AppTest.from_file``, ``streamlit run agent_app/ui/page_script.py``) only adds
``agent_app/ui``. Putting the root on the path first makes ``import agent_app`` work either way.
All drawing lives in :mod:`agent_app.ui.page_layout`, which stays imported between runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from agent_app.ui.page_layout import render_page  # noqa: E402 - needs the path set above

render_page()
