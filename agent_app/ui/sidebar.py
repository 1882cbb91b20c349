"""The sidebar's project, scenes and assistant sections. Every change goes through the workspace and
storage in a widget callback, which Streamlit runs before the script, so the page draws the new state
in the same run; errors show next to the control that caused them and lose nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import streamlit as st

from agent_app.llm_config import LLMStatus
from agent_app.runs.manager import RunManager
from agent_app.storage import Project
from agent_app.ui.formatting import count_of, escape_markdown
from agent_app.ui.notices import notify, rename_field, render_confirmation, show_notices
from agent_app.ui.pickers import Choices, pick_by_id
from agent_app.ui.session_workspace import Workspace
from agent_app.ui.sidebar_control import ASSISTANT_SECTION_KEY

# --- project ----------------------------------------------------------------------------------


def _on_project_picked(workspace: Workspace, picked: str | None) -> None:
    if picked is not None and picked != workspace.project_id:
        workspace.open_project(picked)


def _on_project_created(workspace: Workspace) -> None:
    name = str(st.session_state.get("sidebar_new_project", "")).strip()
    if not name:
        notify(workspace.state, "error", "Give the new project a name first.", "project")
        return
    project = workspace.storage.create_project(name)
    workspace.open_project(project.id)
    st.session_state["sidebar_new_project"] = ""
    st.session_state["sidebar_project"] = project.id


_CONFIRM_DELETE = "sidebar.confirm_delete_project"


def _ask_delete(workspace: Workspace, project_id: str | None) -> None:
    workspace.state[_CONFIRM_DELETE] = project_id


def _delete_project(workspace: Workspace, runs: RunManager | None, project_id: str) -> None:
    workspace.delete_project(project_id, runs)
    st.session_state["sidebar_project"] = workspace.project_id


def _render_delete_project(workspace: Workspace, runs: RunManager | None, project: Project) -> None:
    """Delete the open project, after a question naming what goes with it."""
    if workspace.state.get(_CONFIRM_DELETE) != project.id:
        st.button(
            "Delete this project",
            key="sidebar_delete_project",
            icon=":material/delete:",
            on_click=_ask_delete,
            args=(workspace, project.id),
        )
        return
    files = workspace.storage.count_assets(project.id)
    chats = len(workspace.storage.list_conversations(project.id))
    render_confirmation(
        workspace.state,
        confirm_key=_CONFIRM_DELETE,
        section="project",
        question=f"Delete “{escape_markdown(project.name)}” with its {count_of(files, 'media file')} and "
        f"{count_of(chats, 'conversation')}? This cannot be undone.",
        yes_label="Yes, delete the project",
        key="sidebar_delete_project",
        action=functools.partial(_delete_project, workspace, runs, project.id),
    )


def render_project(workspace: Workspace, runs: RunManager | None) -> None:
    """Pick, create, rename or delete a project; ``runs`` stops a deleted project's runs."""
    projects = workspace.storage.list_projects()
    names = {project.id: project.name for project in projects}
    current = workspace.project()
    names.setdefault(current.id, current.name)
    pick_by_id(
        st.selectbox,
        "Project",
        Choices(names, current.id),
        key="sidebar_project",
        on_pick=lambda i: _on_project_picked(workspace, i),
    )
    with st.expander("New, rename or delete project", icon=":material/add:"):
        st.text_input("Name", key="sidebar_new_project", placeholder="e.g. Harbour documentary")
        st.button("Create project", key="sidebar_create_project", on_click=_on_project_created, args=(workspace,))
        rename = functools.partial(workspace.storage.rename_project, current.id)
        rename_field(workspace.state, "sidebar_rename_project", "project", rename, placeholder=current.name)
        _render_delete_project(workspace, runs, current)
    show_notices(workspace.state, "project")


# --- scenes -----------------------------------------------------------------------------------


def _on_scene_added(workspace: Workspace) -> None:
    name = str(st.session_state.get("sidebar_new_scene", ""))
    scene = workspace.storage.create_scene(workspace.project().id, name)
    workspace.select_scene(scene.id)
    st.session_state["sidebar_new_scene"] = ""


def render_scenes(workspace: Workspace) -> None:
    st.subheader("Scenes", divider="gray")
    scenes = workspace.storage.list_scenes(workspace.project().id)
    if scenes:
        names = {scene.id: escape_markdown(scene.name) for scene in scenes}  # radio options are Markdown
        current = workspace.scene_id if workspace.scene_id in names else scenes[0].id
        workspace.select_scene(current)
        pick_by_id(
            st.radio,
            "Active scene",
            Choices(names, current),
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
            rename = functools.partial(workspace.storage.rename_scene, current)
            rename_field(workspace.state, "sidebar_rename_scene", "scene", rename)
    show_notices(workspace.state, "scene")


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
    """The model and tools; keyed, so the chat's "set up a model" hint can lead here."""
    with st.container(key=ASSISTANT_SECTION_KEY):
        st.subheader("Assistant", divider="gray")
        if status.configured:
            st.markdown(f":green-badge[:material/check_circle: configured] **{status.model}**")
            st.caption(f"Provider: {status.provider}")
        else:
            st.warning(missing_settings_text(status) + SETTINGS_HELP, icon=":material/key_off:")
        tools = ", ".join(f"`{name}`" for name in tool_names) or "none"
        st.caption(f"Enabled tools: {tools}")
