"""What one browser session has open (project, scene, conversation, active asset, playhead), kept in session
state so two sessions never see each other's unsaved choices; what outlives the session is in storage.
"""

from __future__ import annotations

from agent_app.prompt import MAX_LISTED_ASSETS
from agent_app.runs.manager import RunManager
from agent_app.session_stores import AgentStore, ChatStore, SessionState
from agent_app.storage import NotFoundError, Project, Storage
from agent_app.types import AgentContext, MediaAsset

DEFAULT_PROJECT_NAME = "My first project"

_PROJECT = "ws.project_id"
_CONVERSATION = "ws.conversation_id"
_SCENE = "ws.scene_id"
_ASSET = "ws.active_asset_id"
_PLAYHEAD = "ws.playhead_ms"


class Workspace:
    """The session's open project and conversation, and the chat/agent stores bound to them."""

    def __init__(self, state: SessionState, storage: Storage) -> None:
        self.state = state
        self.storage = storage
        self.chat = ChatStore(state)
        self.agent = AgentStore(state)
        self._project: Project | None = None  # read once per run: every panel asks for it
        for key, default in ((_PROJECT, None), (_CONVERSATION, None), (_SCENE, None), (_ASSET, None)):
            state.setdefault(key, default)
        state.setdefault(_PLAYHEAD, 0)
        conversation_id = self.conversation_id
        if conversation_id is not None:
            # The store's persistence hook is an attribute of the store object, which is rebuilt on
            # every run; bind it again to the open conversation (or start over if it is gone).
            try:
                self.chat.set_persistence(storage.chat_persistence(conversation_id))
            except NotFoundError:
                self.open_conversation(None)

    # --- what is open -----------------------------------------------------------------------------
    def _id(self, key: str) -> str | None:
        value = self.state.get(key)
        return None if value is None else str(value)

    @property
    def project_id(self) -> str | None:
        return self._id(_PROJECT)

    @property
    def conversation_id(self) -> str | None:
        return self._id(_CONVERSATION)

    @property
    def scene_id(self) -> str | None:
        return self._id(_SCENE)

    @property
    def active_asset_id(self) -> str | None:
        return self._id(_ASSET)

    @property
    def playhead_ms(self) -> int:
        return int(self.state.get(_PLAYHEAD) or 0)

    def project(self) -> Project:
        """The open project (opening or creating one first if needed).

        Kept for the rest of this run (a :class:`Workspace` lives for one run; a rename or a delete happens in
        a callback, before the next run builds a new one).
        """
        if self.project_id is not None:
            if self._project is not None and self._project.id == self.project_id:
                return self._project
            project = self.storage.get_project(self.project_id)
            if project is not None:
                self._project = project
                return project
        # No project open yet (a fresh session) or it vanished: take the first one (creating it on
        # the very first visit) and its latest chat, unless something unsaved is already on screen.
        projects = self.storage.list_projects()
        project = projects[0] if projects else self.storage.create_project(DEFAULT_PROJECT_NAME)
        self._enter_project(project.id)
        if self.conversation_id is None and not self.chat.messages:
            conversations = self.storage.list_conversations(project.id)
            if conversations:
                self.open_conversation(conversations[0].id)
        self._project = project
        return project

    # --- navigation -------------------------------------------------------------------------------
    def sync_with_url(self, project_id: str | None, conversation_id: str | None) -> bool:
        """Open what the URL names, when it differs from what is open and exists in storage; ``False`` when
        it names a project or conversation that cannot be opened.

        An unknown id (a stale or mistyped link, or another owner's: the storage answers both alike) is not
        opened: the page falls back to what is open, or to the first project, says "not found", and the URL
        is rewritten to match.
        """
        found = True
        if conversation_id and conversation_id != self.conversation_id:
            conversation = self.storage.get_conversation(conversation_id)
            if conversation is not None and (project_id in (None, conversation.project_id)):
                if conversation.project_id != self.project_id:
                    self.open_project(conversation.project_id, open_latest_chat=False)
                self.open_conversation(conversation.id)
                return True
            found = False  # the project, when it is found, still opens
        if project_id and project_id != self.project_id:
            if self.storage.get_project(project_id) is None:
                return False
            self.open_project(project_id, open_latest_chat=not conversation_id)
        return found

    def restore_view(self, scene_id: str | None, asset_id: str | None, playhead_ms: int | None) -> None:
        """Bring back the scene, the asset in the player and the playhead a link names, each only when it
        belongs to the open project (a stale or foreign id is ignored, like an unknown project)."""
        project_id = self.project().id
        if scene_id and scene_id != self.scene_id:
            scene = self.storage.get_scene(scene_id)
            if scene is not None and scene.project_id == project_id:
                self.select_scene(scene_id)
        if asset_id and self.storage.asset_project_id(asset_id) == project_id:
            self.select_asset(asset_id)
            if playhead_ms is not None:
                self.set_playhead(playhead_ms)

    def open_project(self, project_id: str, *, open_latest_chat: bool = True) -> None:
        """Switch to ``project_id``: its first scene, first asset, and its latest chat (or a new one)."""
        self._enter_project(project_id)
        conversations = self.storage.list_conversations(project_id) if open_latest_chat else []
        self.open_conversation(conversations[0].id if conversations else None)

    def _enter_project(self, project_id: str) -> None:
        self.state[_PROJECT] = project_id
        scenes = self.storage.list_scenes(project_id)
        self.state[_SCENE] = scenes[0].id if scenes else None
        newest = self.storage.find_assets(project_id, limit=1)
        self.state[_ASSET] = newest[0].id if newest else None
        self.state[_PLAYHEAD] = 0

    def open_conversation(self, conversation_id: str | None) -> None:
        """Show ``conversation_id``'s stored messages (``None``: an empty, not yet stored chat). One that is
        gone raises :class:`~agent_app.storage.NotFoundError` before anything here changes."""
        if conversation_id is None:
            self.chat.set_persistence(None)
            self.chat.load_messages([])
        else:
            persistence = self.storage.chat_persistence(conversation_id)
            self.chat.load_messages(self.storage.load_messages(conversation_id))
            self.chat.set_persistence(persistence)
        self.state[_CONVERSATION] = conversation_id
        self.chat.set_loading(False)
        self.agent.reset()

    def delete_project(self, project_id: str, runs: RunManager | None) -> None:
        """Delete it from storage with everything in it, each conversation's live run stopped first (a run of
        another process stops at its next heartbeat, its rows gone); the first project left opens, or a new
        one when none is."""
        if runs is not None:
            for conversation in self.storage.list_conversations(project_id):
                runs.delete_conversation(conversation.id)
        self.storage.delete_project(project_id)
        self._project = None
        remaining = self.storage.list_projects()
        project = remaining[0] if remaining else self.storage.create_project(DEFAULT_PROJECT_NAME)
        self.open_project(project.id)

    def delete_conversation(self, conversation_id: str, runs: RunManager | None) -> None:
        """Delete it from storage, its live run stopped first (``runs``: ``None`` when no model is configured,
        so none can go); an open one gives way to a new chat."""
        if runs is not None:
            runs.delete_conversation(conversation_id)
        else:
            self.storage.delete_conversation(conversation_id)
        if self.conversation_id == conversation_id:
            self.open_conversation(None)

    def ensure_conversation(self, first_message: str = "") -> str:
        """The open conversation's id, created (titled by ``first_message``) on first use so that opening the
        page or "New chat" never leaves empty conversations behind; every unsaved message is written first."""
        if self.conversation_id is None:
            conversation = self.storage.create_conversation(self.project().id, first_message)
            self.state[_CONVERSATION] = conversation.id
            self.chat.set_persistence(self.storage.chat_persistence(conversation.id))
        self.chat.save_unsaved()
        return str(self.conversation_id)

    def reload_messages(self) -> None:
        """Show what storage holds for the open conversation (after its last turn was replaced, or a start
        was refused because another tab had changed it); unsaved messages stay."""
        conversation_id = self.conversation_id
        if conversation_id is not None:
            self.chat.load_messages(self.storage.load_messages(conversation_id), keep_unsaved=True)

    def catch_up(self) -> bool:
        """Load what another session (a second tab) added to the open conversation since it was opened
        here; ``True`` when there was something. Costs one indexed count when nothing changed."""
        conversation_id = self.conversation_id
        saved = len(self.chat.messages) - len(self.chat.unsaved)
        if conversation_id is None or self.storage.count_messages(conversation_id) <= saved:
            return False
        error, kind = self.chat.error, self.chat.error_kind
        self.chat.load_messages(self.storage.load_messages(conversation_id), keep_unsaved=True)
        self.chat.set_error(error, kind)
        return True

    # --- scenes, media, playhead ------------------------------------------------------------------
    def select_scene(self, scene_id: str | None) -> None:
        self.state[_SCENE] = scene_id

    def active_asset(self) -> MediaAsset | None:
        """The asset in the player: the chosen one if it is still in the project, else the newest.
        Two indexed lookups, whatever the size of the library."""
        project_id = self.project().id
        chosen_id = self.active_asset_id
        chosen = None
        if chosen_id is not None and self.storage.asset_project_id(chosen_id) == project_id:
            chosen = self.storage.get_asset(chosen_id)
        if chosen is None:
            newest = self.storage.find_assets(project_id, limit=1)
            chosen = newest[0] if newest else None
            self.state[_ASSET] = chosen.id if chosen is not None else None
        return chosen

    def remove_asset(self, asset_id: str) -> None:
        """Remove it from the project (its file is deleted) and from the player."""
        self.storage.remove_asset(asset_id)
        if self.active_asset_id == asset_id:
            self.select_asset(None)

    def select_asset(self, asset_id: str | None) -> None:
        if asset_id != self.active_asset_id:
            self.state[_ASSET] = asset_id
            self.state[_PLAYHEAD] = 0

    def set_playhead(self, milliseconds: int) -> None:
        self.state[_PLAYHEAD] = max(0, int(milliseconds))

    # --- the assistant's view ---------------------------------------------------------------------
    def context(self) -> AgentContext:
        """The :class:`AgentContext` of what the sidebar and player show right now: the project's newest
        :data:`~agent_app.prompt.MAX_LISTED_ASSETS` assets (and the one in the player), the rest counted."""
        project_id = self.project().id
        listed = self.storage.find_assets(project_id, limit=MAX_LISTED_ASSETS)
        total = len(listed) if len(listed) < MAX_LISTED_ASSETS else self.storage.count_assets(project_id)
        active = self.active_asset()
        if active is not None and all(asset.id != active.id for asset in listed):
            listed.append(active)
        scene = self.storage.get_scene(self.scene_id) if self.scene_id is not None else None
        return AgentContext(
            project_id=project_id,
            active_scene_id=self.scene_id,
            active_scene_name=scene.name if scene is not None else None,
            media_assets=listed,
            unlisted_asset_count=max(0, total - len(listed)) or None,
            playback_time_ms=self.playhead_ms,
            active_asset_id=active.id if active is not None else None,
        )
