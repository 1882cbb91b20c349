"""The whole workspace page, drawn once per Streamlit run.

Order matters: the session's :class:`Workspace` is bound first (reopening what the URL names on a
fresh session), then the sidebar, then the player (left) and the chat (right). The URL is
rewritten to the open project and conversation, so a reload or a shared link reopens them.
"""

from __future__ import annotations

import functools

import streamlit as st

from agent_app.llm_config import llm_status
from agent_app.media import saved_edited_transcript
from agent_app.runs.manager import RunManager
from agent_app.session_stores import SessionState
from agent_app.settings import Prices, Settings, load_settings
from agent_app.sign_in.identity import SignedInUser
from agent_app.sign_in.media_links import MediaSigning
from agent_app.storage import LOCAL_OWNER, OwnedStorage, ProjectMediaLibrary, Storage, StorageError, open_storage
from agent_app.tool_plugins import usable_tool_registry
from agent_app.transcriptions.manager import OwnedTranscriptions
from agent_app.types import AgentContext, ToolEnvironment
from agent_app.ui import player, sidebar
from agent_app.ui.account_panel import render_account
from agent_app.ui.chat_panel import render_chat
from agent_app.ui.conversation_list import render_conversation_search, render_conversations
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.layout_css import CHAT_COLUMN_KEY, apply_layout
from agent_app.ui.library_panel import render_media_library
from agent_app.ui.page_access import guard_page
from agent_app.ui.page_parts import CHAT_PART, CONVERSATIONS_PART
from agent_app.ui.resources import get_run_manager, get_transcription_manager
from agent_app.ui.session_workspace import Workspace
from agent_app.ui.sign_in_gate import page_user
from agent_app.ui.transcript_panel import render_transcript_panel
from agent_app.usage_cost import model_prices

PAGE_TITLE = "Agent Session Shell"
_URL_WRITTEN = "ws.url_written"


_URL_KEYS = ("project", "chat", "scene", "asset", "t")


def _wanted_url(workspace: Workspace) -> dict[str, str]:
    """What a reload or a shared link should bring back: project, conversation, active scene, the asset in
    the player and the playhead (``t``, seconds to the millisecond)."""
    wanted = {"project": workspace.project().id}
    for key, value in (
        ("chat", workspace.conversation_id),
        ("scene", workspace.scene_id),
        ("asset", workspace.active_asset_id),
    ):
        if value is not None:
            wanted[key] = value
    if workspace.active_asset_id is not None and workspace.playhead_ms > 0:
        wanted["t"] = f"{workspace.playhead_ms / 1000:g}"
    return wanted


def _url_now() -> dict[str, str]:
    """The parameters of the address this page reads, as it is now."""
    return {key: st.query_params[key] for key in _URL_KEYS if key in st.query_params}


def _seconds_ms(text: str | None) -> int | None:
    """``t=8.146`` as 8146 ms; anything else (missing, negative, not a number) as ``None``."""
    try:
        seconds = float(text) if text else None
    except ValueError:
        return None
    return round(seconds * 1000) if seconds is not None and 0 <= seconds < 1e9 else None


NOT_FOUND_TEXT = (
    "Not found: the project or conversation this link names does not exist. Your own work is in the sidebar."
)
"""Said alike for an id that never existed and for another owner's (no hint that it exists)."""
_LINK_NOT_FOUND = "ws.link_not_found"


def sync_from_url(workspace: Workspace, state: SessionState) -> None:
    """Apply the address when it did not come from this session (a reload, a shared link, an edited
    address); a URL this session wrote is stale after a sidebar change and is ignored. A link to something
    that cannot be opened is remembered until the next link, to say "not found"."""
    current = _url_now()
    if current != state.get(_URL_WRITTEN):
        state[_LINK_NOT_FOUND] = not workspace.sync_with_url(current.get("project"), current.get("chat"))
        workspace.restore_view(current.get("scene"), current.get("asset"), _seconds_ms(current.get("t")))
        player.seek(workspace, workspace.playhead_ms)  # the player starts where the link says


def write_url(workspace: Workspace, state: SessionState) -> None:
    wanted = _wanted_url(workspace)
    current = _url_now()
    if current != wanted:
        st.query_params.from_dict(wanted)
    state[_URL_WRITTEN] = wanted


def storage_failure(settings: Settings, exc: Exception) -> str:
    """Why the page cannot open its storage, naming the setting to look at (never the database URL: it
    holds a password)."""
    if settings.database_url and isinstance(exc, StorageError):
        return f"The database cannot be used (setting AGENT_DATABASE_URL): {exc}"
    return f"The data directory `{settings.data_dir}` cannot be used (setting AGENT_DATA_DIR): {exc}"


def _open_storage(settings: Settings) -> tuple[Storage, SignedInUser | None]:
    """The storage and, with sign-in on, who is signed in: nobody gets past here but a signed-in owner (the
    run stops with what is wrong, or with the sign-in page)."""
    try:
        storage = open_storage(settings)
    except (StorageError, OSError) as exc:
        st.error(storage_failure(settings, exc), icon=":material/database_off:")
        st.stop()
    except ValueError as exc:  # a mistyped storage setting (AGENT_DB_BUSY_TIMEOUT_MS)
        st.error(f"{exc}. {sidebar.SETTINGS_HELP}", icon=":material/database_off:")
        st.stop()
    return storage, page_user(settings, storage)


def _render_chat_part(workspace: Workspace, runs: RunManager | None, prices: Prices | None) -> None:
    """The chat and the address naming its conversation: what switching conversation redraws (a fragment
    rerun, see :mod:`~agent_app.ui.page_parts`), not the whole page."""
    render_chat(workspace, runs, prices)
    write_url(workspace, workspace.state)


def render_page() -> None:
    # An emoji icon is drawn in the browser; a Material icon would be fetched from fonts.gstatic.com on
    # every page load (a request to Google, failing offline).
    st.set_page_config(page_title=PAGE_TITLE, page_icon="🎬", layout="wide")
    apply_layout()  # first: the layout is right from the first paint (the chat does not jump into place)
    state = st.session_state
    settings = load_settings()  # once per run: every part of the page sees the same settings
    guard_page(settings)  # before anything of the workspace is read
    storage, user = _open_storage(settings)
    owned = OwnedStorage(storage, user.owner if user is not None else LOCAL_OWNER)
    workspace = Workspace(state, owned)
    sync_from_url(workspace, state)
    project = workspace.project()
    write_url(workspace, state)
    registry, registry_problem = usable_tool_registry(settings.enabled_tools)
    status = llm_status(settings)
    # Without a model nothing could answer: no run is started (the input says so).
    runs = get_run_manager(settings) if status.configured else None

    left, right = st.columns([5, 6], gap="large")
    # The chat first: its input is usable before the player and the transcript are drawn (the browser
    # draws each part as it arrives); where each part shows is set by its container, not by this order.
    with right, st.container(key=CHAT_COLUMN_KEY):
        st.fragment(_render_chat_part, key=CHAT_PART)(workspace, runs, model_prices(settings))
    with st.sidebar:
        st.title(PAGE_TITLE, anchor=False)
        if user is not None:
            render_account(storage, user)
        sidebar.render_project(workspace, runs)
        render_conversation_search()
        st.fragment(render_conversations, key=CONVERSATIONS_PART)(workspace, runs)
        sidebar.render_scenes(workspace)
        listed = render_media_library(workspace, settings)
        sidebar.render_assistant(status, registry.names())
        if registry_problem is not None:
            st.error(registry_problem, icon=":material/extension_off:")

    with left:
        if state.get(_LINK_NOT_FOUND):
            st.warning(NOT_FOUND_TEXT, icon=":material/search_off:")
        st.header(escape_markdown(project.name), anchor=False)
        media = ProjectMediaLibrary(workspace.storage, project.id)
        shown = workspace.active_asset()
        try:
            transcript = saved_edited_transcript(media, shown.id) if shown is not None else None
        except StorageError as exc:  # the media store out of reach: the page goes on without it
            transcript = None
            st.warning(f"The saved transcript cannot be read now: {exc}.", icon=":material/cloud_off:")
        marks = [segment.start_ms for segment in transcript.segments] if transcript is not None else []
        active = player.render_player(
            workspace, shown, listed, marks, MediaSigning.for_page(settings, user.sign_in_id if user else None)
        )
        if active is not None:
            # After the player: the playing video may just have reported a new position. The panel's tool
            # run names its asset, so its context needs only that one (not the whole library).
            context = AgentContext(
                project_id=project.id,
                active_scene_id=workspace.scene_id,
                media_assets=[active],
                playback_time_ms=workspace.playhead_ms,
                active_asset_id=active.id,
            )
            environment = ToolEnvironment(
                context=context, media=media, data_dir=workspace.storage.data_dir, settings=settings
            )
            seek = functools.partial(player.seek, workspace)
            # The process's jobs as this owner may see them: another owner's asset id reads as a missing one.
            transcriptions = OwnedTranscriptions(get_transcription_manager(settings), owned.transcription_store())
            render_transcript_panel(
                active,
                environment,
                seek,
                transcript if active is shown else None,
                transcriptions,
                editor=media,
            )
    write_url(workspace, state)
