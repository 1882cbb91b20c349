"""The media library in the sidebar: upload, one page of the project's files (newest first, filtered by name),
play and remove (after asking). A rerun reads one page of rows whatever the size of the library, so 2,000
clips redraw as fast as 10.
"""

from __future__ import annotations

import functools

import streamlit as st

from agent_app.media import has_audio_stream
from agent_app.session_stores import SessionState
from agent_app.settings import Settings
from agent_app.storage import (
    ALLOWED_EXTENSIONS,
    AssetRejectedError,
    StorageError,
    find_same_file,
)
from agent_app.types import MediaAsset
from agent_app.ui.formatting import escape_markdown, format_duration, format_size
from agent_app.ui.notices import notify, run_confirmed, show_notices
from agent_app.ui.session_workspace import Workspace
from agent_app.ui.sidebar import SETTINGS_HELP

PAGE_SIZE = 8
_UPLOAD_ROUND = "sidebar.upload_round"
_IMPORTED = "sidebar.imported_file_ids"
_CONFIRM_REMOVE = "sidebar.confirm_remove_asset_id"
_OFFSET = "library.offset"
_FILTER = "library_filter"
_EMPTY = "No media yet: upload a clip to talk about it with the assistant."


def _uploader_key(state: SessionState) -> str:
    return f"sidebar_upload_{int(state.get(_UPLOAD_ROUND, 0))}"


def _on_upload(workspace: Workspace, key: str, max_bytes: int) -> None:
    """Import each newly uploaded file once, then empty the uploader (a new widget key).

    The browser may send an uploader's files again on the next rerun before it drops the replaced
    widget, so uploads are also remembered by Streamlit's per-upload ``file_id``: no double import.
    """
    files = st.session_state.get(key) or []
    seen = workspace.state.setdefault(_IMPORTED, {})
    if not isinstance(seen, dict):
        raise TypeError(f"session state {_IMPORTED} is not a dict")
    project_id = workspace.project().id
    imported: list[MediaAsset] = []
    for uploaded in files:
        if uploaded.file_id in seen:
            continue
        seen[uploaded.file_id] = None
        try:
            same = find_same_file(workspace.storage, project_id, uploaded, uploaded.size)
            if same is not None:
                notify(workspace.state, "info", f"“{uploaded.name}” is already in the library as “{same.name}”.")
                workspace.select_asset(same.id)
                continue
            imported.append(workspace.storage.import_asset(project_id, uploaded.name, uploaded, max_bytes=max_bytes))
        except AssetRejectedError as exc:
            notify(workspace.state, "error", str(exc))
        except (StorageError, OSError) as exc:
            notify(workspace.state, "error", f"“{uploaded.name}” could not be stored: {exc}")
    for asset in imported:
        notify(workspace.state, "success", f"Added “{asset.name}” ({format_duration(asset.duration_ms)}).")
        if asset.kind == "video" and not _has_sound(workspace, asset):
            notify(workspace.state, "warning", f"“{asset.name}” has no sound: it plays, but cannot be transcribed.")
    if imported:
        workspace.select_asset(imported[-1].id)
    workspace.state[_UPLOAD_ROUND] = int(workspace.state.get(_UPLOAD_ROUND, 0)) + 1


def _has_sound(workspace: Workspace, asset: MediaAsset) -> bool:
    """Whether the stored file of ``asset`` holds an audio stream (a store out of reach: assumed so)."""
    try:
        with workspace.storage.media_file(asset.id) as path:
            return path is None or has_audio_stream(path)
    except StorageError:
        return True


def _on_remove_asked(workspace: Workspace, asset_id: str | None) -> None:
    """The bin was clicked (or the question cancelled): removing deletes the file, so ask first."""
    workspace.state[_CONFIRM_REMOVE] = asset_id


def _on_play(workspace: Workspace, asset_id: str) -> None:
    workspace.select_asset(asset_id)


def _on_filter(state: SessionState) -> None:
    state[_OFFSET] = 0  # a new filter starts at its newest match


def _on_turn_page(state: SessionState, step: int) -> None:
    state[_OFFSET] = max(0, int(state.get(_OFFSET, 0)) + step * PAGE_SIZE)


def _render_uploader(workspace: Workspace, settings: Settings) -> None:
    key = _uploader_key(workspace.state)
    problems = settings.problems_with("AGENT_MAX_UPLOAD_MB")
    if problems:  # a mistyped AGENT_MAX_UPLOAD_MB: say so here, the rest of the page works
        st.error(f"Uploads are off: {problems[0]}. {SETTINGS_HELP}", icon=":material/upload_file:")
        return
    # No ``type=`` filter: Streamlit would refuse other files with a message of its own ("text/plain files
    # are not allowed") beside ours; the import refuses them instead, in one message in the app's words.
    st.file_uploader(
        "Add video or audio",
        accept_multiple_files=True,
        max_upload_size=settings.max_upload_mb,
        key=key,
        on_change=_on_upload,
        args=(workspace, key, settings.max_upload_bytes),
        help=f"Accepted: {', '.join(ALLOWED_EXTENSIONS)}.",
    )


def render_media_library(workspace: Workspace, settings: Settings) -> list[MediaAsset]:
    """Draw the library: the uploader, a name filter and one page of assets, newest first. Returns the
    assets listed (the player offers them)."""
    st.subheader("Media library", divider="gray")
    _render_uploader(workspace, settings)
    show_notices(workspace.state, "media")
    state = workspace.state
    project_id = workspace.project().id
    name = str(st.session_state.get(_FILTER) or "").strip()
    offset = int(state.get(_OFFSET, 0))
    assets = workspace.storage.find_assets(project_id, name_contains=name, limit=PAGE_SIZE + 1, offset=offset)
    if offset and not assets:  # the page emptied (files removed, a narrower filter): back to the start
        offset = state[_OFFSET] = 0
        assets = workspace.storage.find_assets(project_id, name_contains=name, limit=PAGE_SIZE + 1)
    more = len(assets) > PAGE_SIZE
    assets = assets[:PAGE_SIZE]
    if name or offset or more:
        st.text_input(
            "Find by name",
            key=_FILTER,
            on_change=_on_filter,
            args=(state,),
            placeholder="Find by name",
            icon=":material/search:",
            label_visibility="collapsed",
        )
    if not assets:
        st.caption(f"No file name contains “{escape_markdown(name)}”." if name else _EMPTY)
    for asset in assets:
        _render_asset(workspace, asset)
    if offset or more:
        _render_pager(state, offset, len(assets), more, workspace.storage.count_assets(project_id, name_contains=name))
    return assets


def _render_pager(state: SessionState, offset: int, shown: int, more: bool, total: int) -> None:
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.button(
            "Newer",
            key="library_newer",
            icon=":material/chevron_left:",
            on_click=_on_turn_page,
            args=(state, -1),
            disabled=offset == 0,
            type="tertiary",
        )
        st.caption(f"{offset + 1}–{offset + shown} of {total:,}")
        st.button(
            "Older",
            key="library_older",
            icon=":material/chevron_right:",
            on_click=_on_turn_page,
            args=(state, 1),
            disabled=not more,
            type="tertiary",
        )


def _render_asset(workspace: Workspace, asset: MediaAsset) -> None:
    active_id = workspace.active_asset_id
    icon = ":material/movie:" if asset.kind == "video" else ":material/music_note:"
    with st.container(border=True):
        badge = " :blue-badge[in the player]" if asset.id == active_id else ""
        st.markdown(f"{icon} **{escape_markdown(asset.name)}**{badge}")
        # A horizontal container, not columns: columns stack on a phone, one button per line. The
        # buttons carry words, not only icons: an icon's name ("delete") is all a screen reader or a
        # keyboard user would get, the same for every file.
        st.caption(f"{format_duration(asset.duration_ms)} · {format_size(asset.size_bytes)}")
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            name = escape_markdown(asset.name)  # a tooltip is Markdown too
            actions = (
                ("play", "Play", ":material/play_arrow:", f"Show {name} in the player", _on_play),
                ("remove", "Remove", ":material/delete:", f"Remove {name} from the project", _on_remove_asked),
            )
            for action, label, icon_name, help_text, callback in actions:
                st.button(
                    label,
                    key=f"sidebar_{action}_{asset.id}",
                    icon=icon_name,
                    help=help_text,
                    on_click=callback,
                    args=(workspace, asset.id),
                    type="tertiary",
                    disabled=action == "play" and asset.id == active_id,  # it is in the player already
                )
        if workspace.state.get(_CONFIRM_REMOVE) == asset.id:
            _render_remove_question(workspace, asset)


def _render_remove_question(workspace: Workspace, asset: MediaAsset) -> None:
    st.warning(
        f"Remove “{escape_markdown(asset.name)}” from the project? Its media file is deleted.", icon=":material/delete:"
    )
    yes_col, no_col = st.columns(2)
    yes_col.button(
        "Yes, remove",
        key=f"sidebar_remove_yes_{asset.id}",
        on_click=run_confirmed,
        args=(workspace.state, _CONFIRM_REMOVE, "media", functools.partial(workspace.remove_asset, asset.id)),
        type="primary",
        width="stretch",
    )
    no_col.button(
        "Keep", key=f"sidebar_remove_no_{asset.id}", on_click=_on_remove_asked, args=(workspace, None), width="stretch"
    )
