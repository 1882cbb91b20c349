"""The player of the active asset and the playhead the assistant is told about (set here, by a transcript
segment, or reported by the playing video). Without the media route (AppTest, a bare ``streamlit run``
of the page script) it falls back to ``st.video``, which starts on whole seconds and reports nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from agent_app.routes.media import media_url
from agent_app.sign_in.media_links import MediaSigning
from agent_app.storage import StorageError
from agent_app.types import MediaAsset
from agent_app.ui.formatting import format_duration, format_size
from agent_app.ui.pickers import Choices, pick_by_id
from agent_app.ui.player_element import media_player
from agent_app.ui.session_workspace import Workspace

_PLAYHEAD_WIDGET = "player_playhead_s"
_IN_PAGE = "player.in_page"
"""Whether this run's player is the browser's own media element (set as it is drawn, before the transcript)."""
_SEEK_ID = "player.seek_id"
"""Counts the seeks asked for in this session: the browser's player jumps only when it changes."""


def _asked_to_seek() -> None:
    st.session_state[_SEEK_ID] = int(st.session_state.get(_SEEK_ID, 0)) + 1


def _on_asset_picked(workspace: Workspace, picked: str | None) -> None:
    workspace.select_asset(picked)
    st.session_state[_PLAYHEAD_WIDGET] = 0.0
    _asked_to_seek()


def _on_playhead_changed(workspace: Workspace) -> None:
    seconds = float(st.session_state.get(_PLAYHEAD_WIDGET) or 0.0)
    workspace.set_playhead(round(seconds * 1000))
    _asked_to_seek()


def seek(workspace: Workspace, milliseconds: int) -> None:
    """Move the playhead and the player there (the transcript panel calls this when a segment is clicked)."""
    workspace.set_playhead(milliseconds)
    st.session_state[_PLAYHEAD_WIDGET] = max(0, milliseconds) / 1000
    _asked_to_seek()


def plays_in_page() -> bool:
    """Whether the page's player is the browser's own media element (the media route is mounted), which the
    transcript moves directly, rather than ``st.video``."""
    return bool(st.session_state.get(_IN_PAGE))


def render_player(
    workspace: Workspace,
    active: MediaAsset | None,
    choices: Sequence[MediaAsset],
    marks_ms: Sequence[int] = (),
    signing: MediaSigning | None = None,
) -> MediaAsset | None:
    """Draw the asset picker (``active`` and ``choices``: what the library lists now, not the whole
    library), the player and the playhead; return the asset in the player. ``marks_ms`` are the starts
    of the transcript's segments: the playing video reports its position at each. ``signing`` signs the
    media route's URL (sign-in on)."""
    if active is None:
        st.info(
            "Upload a video or audio file in the sidebar's media library to see it here and ask the "
            "assistant about it.",
            icon=":material/movie:",
        )
        return None
    names = {asset.id: asset.name for asset in choices}
    if active.id not in names:  # chosen from a page of the library the sidebar no longer shows
        names = {active.id: active.name} | names
    pick_by_id(
        st.selectbox,
        "In the player",
        Choices(names, active.id),
        key="player_asset",
        on_pick=lambda i: _on_asset_picked(workspace, i),
    )
    try:
        if workspace.storage.has_media_file(active.id):
            _render_media(workspace, active, marks_ms, signing)
        else:
            st.error(f"The file of “{active.name}” is missing from the media store.", icon=":material/error:")
    except StorageError as exc:
        st.error(f"The file of “{active.name}” cannot be read now: {exc}.", icon=":material/error:")
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


def _render_media(
    workspace: Workspace, active: MediaAsset, marks_ms: Sequence[int], signing: MediaSigning | None
) -> None:
    """The player itself: from the store's presigned URL or the media route (exact seeks, position reported
    back), else read by Streamlit from disk (see agent_app.routes.media)."""
    url = media_url(workspace.storage, st.context.url, active, signing)
    st.session_state[_IN_PAGE] = url is not None
    if url is None:
        start_seconds = workspace.playhead_ms // 1000
        with workspace.storage.media_file(active.id) as path:
            if path is None:
                return
            if active.kind == "video":
                st.video(str(path), start_time=start_seconds, format=active.mime_type or "video/mp4")
            else:
                st.audio(str(path), start_time=start_seconds, format=active.mime_type or "audio/wav")
        return
    position = media_player(
        url,
        active,
        start_ms=workspace.playhead_ms,
        seek_id=int(st.session_state.get(_SEEK_ID, 0)),
        marks_ms=marks_ms,
    )
    if position is not None:
        workspace.set_playhead(position)
