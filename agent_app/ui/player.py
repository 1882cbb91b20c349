"""The player of the active asset and the playhead the assistant is told about.

The playhead (``playbackTimeMs`` in the context) is what the user sets here; the player starts
there. Browsers do not report their playback position back to Streamlit, so the playhead is the
user's statement of "where I am", not a live reading of the video element.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from agent_app.types import MediaAsset
from agent_app.ui.formatting import format_duration, format_size
from agent_app.ui.media_route import media_url
from agent_app.ui.pickers import pick_by_id
from agent_app.ui.session_workspace import Workspace

_PLAYHEAD_WIDGET = "player_playhead_s"


def _on_asset_picked(workspace: Workspace, picked: str | None) -> None:
    workspace.select_asset(picked)
    st.session_state[_PLAYHEAD_WIDGET] = 0.0


def _on_playhead_changed(workspace: Workspace) -> None:
    seconds = float(st.session_state.get(_PLAYHEAD_WIDGET) or 0.0)
    workspace.set_playhead(round(seconds * 1000))


def seek(workspace: Workspace, milliseconds: int) -> None:
    """Move the playhead (the transcript panel calls this when a segment is clicked)."""
    workspace.set_playhead(milliseconds)
    st.session_state[_PLAYHEAD_WIDGET] = max(0, milliseconds) / 1000


def render_player(workspace: Workspace, assets: Sequence[MediaAsset]) -> MediaAsset | None:
    """Draw the asset picker, the player and the playhead; return the asset in the player."""
    active = workspace.active_asset(list(assets))
    if active is None:
        st.info(
            "Upload a video or audio file in the sidebar's media library to see it here and ask the "
            "assistant about it.",
            icon=":material/movie:",
        )
        return None
    names = {asset.id: asset.name for asset in assets}
    pick_by_id(
        st.selectbox,
        "In the player",
        names,
        active.id,
        key="player_asset",
        on_pick=lambda i: _on_asset_picked(workspace, i),
    )
    path = workspace.storage.media_path(active.id)
    start_seconds = workspace.playhead_ms // 1000
    if path is None:
        st.error(f"The file of “{active.name}” is missing from the data directory.", icon=":material/error:")
    else:
        # Streamed by the media route when app.py mounts it; else read by Streamlit (see media_route).
        source = media_url(st.context.url, active.id) or str(path)
        if active.kind == "video":
            st.video(source, start_time=start_seconds, format=active.mime_type or "video/mp4")
        else:
            st.audio(source, start_time=start_seconds, format=active.mime_type or "audio/wav")
    duration_s = (active.duration_ms or 0) / 1000
    st.session_state[_PLAYHEAD_WIDGET] = (
        min(workspace.playhead_ms / 1000, duration_s) if duration_s else (workspace.playhead_ms / 1000)
    )
    st.number_input(
        f"Playhead (seconds, of {format_duration(active.duration_ms)})",
        min_value=0.0,
        max_value=duration_s if duration_s > 0 else None,
        step=1.0,
        format="%.1f",
        key=_PLAYHEAD_WIDGET,
        on_change=_on_playhead_changed,
        args=(workspace,),
        help="Where you are in the clip: the player starts here and the assistant is told about it.",
    )
    st.caption(
        f"{active.kind.title()} · {format_duration(active.duration_ms)} · {format_size(active.size_bytes)} · "
        f"id `{active.id}`"
    )
    return active
