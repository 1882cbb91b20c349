"""The sidebar: project, scenes, media library, and what the assistant is (model and tools).

Every change goes through :class:`~agent_app.ui.session_workspace.Workspace` and storage in a widget
callback, which Streamlit runs before the script, so the rest of the page already draws the new
state in the same run. Errors are shown next to the control that caused them and lose nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from agent_app.llm_config import LLMStatus
from agent_app.storage import (
    ALLOWED_EXTENSIONS,
    AssetRejectedError,
    StorageError,
    find_same_file,
    max_upload_bytes,
)
from agent_app.stores import SessionState
from agent_app.types import MediaAsset
from agent_app.ui.formatting import escape_markdown, format_duration, format_size
from agent_app.ui.pickers import pick_by_id
from agent_app.ui.session_workspace import Workspace

_UPLOAD_ROUND = "sidebar.upload_round"
_NOTICES = "sidebar.notices"
_IMPORTED = "sidebar.imported_file_ids"
_CONFIRM_REMOVE = "sidebar.confirm_remove_asset_id"


def _notices(state: SessionState) -> list[tuple[str, str, str]]:
    """``(section, kind, text)`` messages from the last callback, shown once on the next draw."""
    value = state.setdefault(_NOTICES, [])
    assert isinstance(value, list)
    return value


def _notify(state: SessionState, kind: str, text: str, section: str = "media") -> None:
    _notices(state).append((section, kind, text))


def _show_notices(state: SessionState, section: str) -> None:
    """The notices of ``section``, next to the controls that caused them."""
    pending = _notices(state)
    for notice_section, kind, text in pending:
        if notice_section != section:
            continue
        if kind == "error":
            st.error(escape_markdown(text), icon=":material/error:")
        elif kind == "info":
            st.info(escape_markdown(text), icon=":material/info:")
        else:
            st.success(escape_markdown(text), icon=":material/check_circle:")
    state[_NOTICES] = [notice for notice in pending if notice[0] != section]


# --- project ----------------------------------------------------------------------------------


def _on_project_picked(workspace: Workspace, picked: str | None) -> None:
    if picked is not None and picked != workspace.project_id:
        workspace.open_project(picked)


def _on_project_created(workspace: Workspace) -> None:
    name = str(st.session_state.get("sidebar_new_project", "")).strip()
    if not name:
        _notify(workspace.state, "error", "Give the new project a name first.", "project")
        return
    project = workspace.storage.create_project(name)
    workspace.open_project(project.id)
    st.session_state["sidebar_new_project"] = ""
    st.session_state["sidebar_project"] = project.id


def _on_project_renamed(workspace: Workspace) -> None:
    name = str(st.session_state.get("sidebar_rename_project", "")).strip()
    if not name:
        _notify(workspace.state, "error", "Type the project's new name first.", "project")
        return
    try:
        workspace.storage.rename_project(workspace.project().id, name)
    except StorageError as exc:
        _notify(workspace.state, "error", str(exc), "project")
        return
    st.session_state["sidebar_rename_project"] = ""


def render_project(workspace: Workspace) -> None:
    projects = workspace.storage.list_projects()
    names = {project.id: project.name for project in projects}
    current = workspace.project()
    names.setdefault(current.id, current.name)
    pick_by_id(
        st.selectbox,
        "Project",
        names,
        current.id,
        key="sidebar_project",
        on_pick=lambda i: _on_project_picked(workspace, i),
    )
    with st.expander("New or rename project", icon=":material/add:"):
        st.text_input("Name", key="sidebar_new_project", placeholder="e.g. Harbour documentary")
        st.button("Create project", key="sidebar_create_project", on_click=_on_project_created, args=(workspace,))
        st.text_input("Rename this project to", key="sidebar_rename_project", placeholder=current.name)
        st.button(
            "Rename project", key="sidebar_rename_project_button", on_click=_on_project_renamed, args=(workspace,)
        )
    _show_notices(workspace.state, "project")


# --- scenes -----------------------------------------------------------------------------------


def _on_scene_added(workspace: Workspace) -> None:
    name = str(st.session_state.get("sidebar_new_scene", ""))
    scene = workspace.storage.create_scene(workspace.project().id, name)
    workspace.select_scene(scene.id)
    st.session_state["sidebar_new_scene"] = ""


def _on_scene_renamed(workspace: Workspace) -> None:
    scene_id = workspace.scene_id
    name = str(st.session_state.get("sidebar_rename_scene", "")).strip()
    if scene_id is None or not name:
        _notify(workspace.state, "error", "Type the scene's new name first.", "scenes")
        return
    try:
        workspace.storage.rename_scene(scene_id, name)
    except StorageError as exc:
        _notify(workspace.state, "error", str(exc), "scenes")
        return
    st.session_state["sidebar_rename_scene"] = ""


def render_scenes(workspace: Workspace) -> None:
    st.subheader("Scenes", divider="gray")
    scenes = workspace.scenes()
    if scenes:
        names = {scene.id: escape_markdown(scene.name) for scene in scenes}  # radio options are Markdown
        current = workspace.scene_id if workspace.scene_id in names else scenes[0].id
        workspace.select_scene(current)
        pick_by_id(
            st.radio,
            "Active scene",
            names,
            current,
            key="sidebar_scene",
            on_pick=workspace.select_scene,
            label_visibility="collapsed",
        )
    else:
        st.caption("No scenes yet.")
    with st.expander("Add or rename a scene", icon=":material/edit:"):
        st.text_input("New scene", key="sidebar_new_scene", placeholder=f"Scene {len(scenes) + 1}")
        st.button("Add scene", key="sidebar_add_scene", on_click=_on_scene_added, args=(workspace,))
        if scenes:
            st.text_input("Rename the active scene to", key="sidebar_rename_scene")
            st.button("Rename scene", key="sidebar_rename_scene_button", on_click=_on_scene_renamed, args=(workspace,))
    _show_notices(workspace.state, "scenes")


# --- media library ----------------------------------------------------------------------------


def _uploader_key(state: SessionState) -> str:
    return f"sidebar_upload_{int(state.get(_UPLOAD_ROUND, 0))}"


def _on_upload(workspace: Workspace, key: str) -> None:
    """Import each newly uploaded file once, then empty the uploader (a new widget key).

    The browser may send an uploader's files again on the next rerun before it drops the replaced
    widget, so uploads are also remembered by Streamlit's per-upload ``file_id``: no double import.
    """
    files = st.session_state.get(key) or []
    seen = workspace.state.setdefault(_IMPORTED, {})
    assert isinstance(seen, dict)
    project_id = workspace.project().id
    imported: list[MediaAsset] = []
    for uploaded in files:
        if uploaded.file_id in seen:
            continue
        seen[uploaded.file_id] = None
        same = find_same_file(workspace.storage, project_id, uploaded, uploaded.size)
        if same is not None:
            _notify(workspace.state, "info", f"“{uploaded.name}” is already in the library as “{same.name}”.")
            workspace.select_asset(same.id)
            continue
        try:
            imported.append(workspace.storage.import_asset(project_id, uploaded.name, uploaded))
        except AssetRejectedError as exc:
            _notify(workspace.state, "error", str(exc))
        except (StorageError, OSError) as exc:
            _notify(workspace.state, "error", f"“{uploaded.name}” could not be stored: {exc}")
    for asset in imported:
        _notify(workspace.state, "success", f"Added “{asset.name}” ({format_duration(asset.duration_ms)}).")
    if imported:
        workspace.select_asset(imported[-1].id)
    workspace.state[_UPLOAD_ROUND] = int(workspace.state.get(_UPLOAD_ROUND, 0)) + 1


def _on_remove_asked(workspace: Workspace, asset_id: str | None) -> None:
    """The bin was clicked (or the question cancelled): removing deletes the file, so ask first."""
    workspace.state[_CONFIRM_REMOVE] = asset_id


def _on_remove(workspace: Workspace, asset_id: str) -> None:
    workspace.state[_CONFIRM_REMOVE] = None
    try:
        workspace.storage.remove_asset(asset_id)
    except StorageError as exc:
        _notify(workspace.state, "error", str(exc))
        return
    if workspace.active_asset_id == asset_id:
        workspace.select_asset(None)


def _on_play(workspace: Workspace, asset_id: str) -> None:
    workspace.select_asset(asset_id)


def render_media_library(workspace: Workspace, assets: Sequence[MediaAsset]) -> None:
    st.subheader("Media library", divider="gray")
    key = _uploader_key(workspace.state)
    try:
        limit = max_upload_bytes()
    except ValueError as exc:  # a mistyped AGENT_MAX_UPLOAD_MB: say so here, the rest of the page works
        st.error(f"Uploads are off: {exc}. {SETTINGS_HELP}", icon=":material/upload_file:")
    else:
        st.file_uploader(
            "Add video or audio",
            type=list(ALLOWED_EXTENSIONS),
            accept_multiple_files=True,
            max_upload_size=max(1, limit // (1024 * 1024)),
            key=key,
            on_change=_on_upload,
            args=(workspace, key),
        )
    _show_notices(workspace.state, "media")
    if not assets:
        st.caption("No media yet: upload a clip to talk about it with the assistant.")
    active_id = workspace.active_asset_id
    for asset in assets:
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
        on_click=_on_remove,
        args=(workspace, asset.id),
        type="primary",
        width="stretch",
    )
    no_col.button(
        "Keep", key=f"sidebar_remove_no_{asset.id}", on_click=_on_remove_asked, args=(workspace, None), width="stretch"
    )


# --- the assistant ----------------------------------------------------------------------------

SETTINGS_HELP = (
    "Settings go in `.streamlit/secrets.toml` (see `.streamlit/secrets.toml.example`) or in the environment; "
    "reload the page after changing them."
)


def missing_settings_text(status: LLMStatus) -> str:
    """Which settings the assistant lacks and where to put them (never a value)."""
    if status.missing:
        names = ", ".join(f"`{name}`" for name in status.missing)
        text = f"The assistant is not configured: {names} {'is' if len(status.missing) == 1 else 'are'} missing. "
        return text + "".join(f"{problem}. " for problem in status.invalid)  # all fixes at once, not one per reload
    return f"The assistant is not configured: {status.problem or 'unknown problem'}. "


def render_assistant(status: LLMStatus, tool_names: Sequence[str]) -> None:
    st.subheader("Assistant", divider="gray")
    if status.configured:
        st.markdown(f":green-badge[:material/check_circle: configured] **{status.model}**")
        st.caption(f"Provider: {status.provider}")
    else:
        st.warning(missing_settings_text(status) + SETTINGS_HELP, icon=":material/key_off:")
    tools = ", ".join(f"`{name}`" for name in tool_names) or "none"
    st.caption(f"Enabled tools: {tools}")
