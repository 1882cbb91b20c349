"""One owner's view of a :class:`~agent_app.storage.base.Storage`: what the page works through, so every panel
(sidebar, search, links, exports, player, uploads) sees only the signed-in owner's projects and what is in them.

Another owner's id is answered exactly as an id that does not exist: ``None`` or nothing from a read,
:class:`~agent_app.storage.base.NotFoundError` with the same words from a write. Without sign-in the owner is
:data:`~agent_app.storage.models.LOCAL_OWNER`, so the one path serves both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from agent_app.media.transcript_cache import TranscriptStore
from agent_app.runs.run_store import RunStore
from agent_app.session_stores import ChatPersistence
from agent_app.storage.accounts import AccountStore
from agent_app.storage.base import ASSET_GONE, CONVERSATION_GONE, PROJECT_GONE, SCENE_GONE, NotFoundError, Storage
from agent_app.storage.media_store import MediaStore
from agent_app.storage.models import LOCAL_OWNER, Conversation, Owner, Project, Scene
from agent_app.storage.owned_transcriptions import OwnedTranscriptionStore
from agent_app.storage.persistence import ConversationPersistence
from agent_app.storage.sqlite_assets import DEFAULT_MAX_UPLOAD_BYTES
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits
from agent_app.types import ChatMessage, MediaAsset


class OwnedStorage:
    """``storage`` as ``owner`` may see it. Ownership answers are kept for the life of the instance (one page
    run): a project never changes owner while it is open."""

    def __init__(self, storage: Storage, owner: Owner) -> None:
        self.inner = storage
        self.owner = owner
        self._owned: dict[str, bool] = {}

    # --- the one check ----------------------------------------------------------------------------
    def owns_project(self, project_id: str | None) -> bool:
        if project_id is None:
            return False
        owned = self._owned.get(project_id)
        if owned is None:
            project = self.inner.get_project(project_id)
            owned = self._owned[project_id] = project is not None and project.owner == self.owner
        return owned

    def _require_project(self, project_id: str) -> None:
        if not self.owns_project(project_id):
            raise NotFoundError(PROJECT_GONE)

    def _require_conversation(self, conversation_id: str) -> None:
        if self.get_conversation(conversation_id) is None:
            raise NotFoundError(CONVERSATION_GONE)

    # --- projects -------------------------------------------------------------------------------
    def create_project(self, name: str, owner: Owner = LOCAL_OWNER) -> Project:
        """A project of this view's owner (``owner`` is not consulted: a view creates only its own)."""
        project = self.inner.create_project(name, self.owner)
        self._owned[project.id] = True
        return project

    def get_project(self, project_id: str) -> Project | None:
        project = self.inner.get_project(project_id)
        if project is None or project.owner != self.owner:
            return None
        self._owned[project.id] = True
        return project

    def list_projects(self, owner: Owner = LOCAL_OWNER) -> list[Project]:
        """This view's owner's projects (``owner`` is not consulted)."""
        return self.inner.list_projects(self.owner)

    def give_unowned_projects(self, owner: Owner) -> int:
        """Give the projects of nobody to this view's owner (``owner`` is not consulted)."""
        self._owned.clear()
        return self.inner.give_unowned_projects(self.owner)

    def rename_project(self, project_id: str, name: str) -> Project:
        self._require_project(project_id)
        return self.inner.rename_project(project_id, name)

    def delete_project(self, project_id: str) -> None:
        self._require_project(project_id)
        self.inner.delete_project(project_id)
        self._owned.pop(project_id, None)

    # --- scenes ---------------------------------------------------------------------------------
    def create_scene(self, project_id: str, name: str) -> Scene:
        self._require_project(project_id)
        return self.inner.create_scene(project_id, name)

    def get_scene(self, scene_id: str) -> Scene | None:
        scene = self.inner.get_scene(scene_id)
        return scene if scene is not None and self.owns_project(scene.project_id) else None

    def list_scenes(self, project_id: str) -> list[Scene]:
        return self.inner.list_scenes(project_id) if self.owns_project(project_id) else []

    def rename_scene(self, scene_id: str, name: str) -> Scene:
        if self.get_scene(scene_id) is None:
            raise NotFoundError(SCENE_GONE)
        return self.inner.rename_scene(scene_id, name)

    # --- media ----------------------------------------------------------------------------------
    def import_asset(
        self, project_id: str, file_name: str, data: BinaryIO, *, max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    ) -> MediaAsset:
        self._require_project(project_id)
        return self.inner.import_asset(project_id, file_name, data, max_bytes=max_bytes)

    def asset_project_id(self, asset_id: str) -> str | None:
        project_id = self.inner.asset_project_id(asset_id)
        return project_id if self.owns_project(project_id) else None

    def get_asset(self, asset_id: str) -> MediaAsset | None:
        return self.inner.get_asset(asset_id) if self.asset_project_id(asset_id) is not None else None

    @contextmanager
    def media_file(self, asset_id: str) -> Iterator[Path | None]:
        if self.asset_project_id(asset_id) is None:
            yield None
            return
        with self.inner.media_file(asset_id) as path:
            yield path

    def has_media_file(self, asset_id: str) -> bool:
        return self.asset_project_id(asset_id) is not None and self.inner.has_media_file(asset_id)

    def known_hash(self, asset_id: str) -> str | None:
        return self.inner.known_hash(asset_id) if self.asset_project_id(asset_id) is not None else None

    def content_hash(self, asset_id: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        if self.asset_project_id(asset_id) is None:
            return None
        return self.inner.content_hash(asset_id, on_progress)

    def playback_url(self, asset_id: str, mime_type: str | None, route_url: str | None) -> str | None:
        if self.asset_project_id(asset_id) is None:
            return None
        return self.inner.playback_url(asset_id, mime_type, route_url)

    def transcripts(self) -> TranscriptStore:
        """The transcript cache, keyed by a file's content: reached only through an owned asset's hash."""
        return self.inner.transcripts()

    @property
    def media_store(self) -> MediaStore:
        return self.inner.media_store

    def list_assets(self, project_id: str) -> list[MediaAsset]:
        return self.inner.list_assets(project_id) if self.owns_project(project_id) else []

    def find_assets(self, project_id: str, *, name_contains: str = "", limit: int, offset: int = 0) -> list[MediaAsset]:
        if not self.owns_project(project_id):
            return []
        return self.inner.find_assets(project_id, name_contains=name_contains, limit=limit, offset=offset)

    def count_assets(self, project_id: str, *, name_contains: str = "") -> int:
        return self.inner.count_assets(project_id, name_contains=name_contains) if self.owns_project(project_id) else 0

    def remove_asset(self, asset_id: str) -> None:
        if self.asset_project_id(asset_id) is None:
            raise NotFoundError(ASSET_GONE)
        self.inner.remove_asset(asset_id)

    # --- transcript edits (only of an asset the owner sees) -------------------------------------------
    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        return self.inner.transcript_edits(asset_id) if self.asset_project_id(asset_id) else TranscriptEdits()

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None:
        self._require_asset(asset_id)
        self.inner.save_correction(asset_id, correction)

    def remove_correction(self, asset_id: str, start_ms: int) -> None:
        self._require_asset(asset_id)
        self.inner.remove_correction(asset_id, start_ms)

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None:
        self._require_asset(asset_id)
        self.inner.name_speaker(asset_id, speaker, name)

    def _require_asset(self, asset_id: str) -> None:
        if self.asset_project_id(asset_id) is None:
            raise NotFoundError(f"No asset {asset_id}")

    # --- conversations --------------------------------------------------------------------------
    def create_conversation(self, project_id: str, title: str = "") -> Conversation:
        self._require_project(project_id)
        return self.inner.create_conversation(project_id, title)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        conversation = self.inner.get_conversation(conversation_id)
        return conversation if conversation is not None and self.owns_project(conversation.project_id) else None

    def list_conversations(self, project_id: str, *, limit: int | None = None) -> list[Conversation]:
        return self.inner.list_conversations(project_id, limit=limit) if self.owns_project(project_id) else []

    def search_conversations(self, project_id: str, words: Sequence[str], *, limit: int) -> list[Conversation]:
        if not self.owns_project(project_id):
            return []
        return self.inner.search_conversations(project_id, words, limit=limit)

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        self._require_conversation(conversation_id)
        return self.inner.rename_conversation(conversation_id, title)

    def delete_conversation(self, conversation_id: str) -> None:
        self._require_conversation(conversation_id)
        self.inner.delete_conversation(conversation_id)

    def append_message(self, conversation_id: str, message: ChatMessage) -> None:
        self._require_conversation(conversation_id)
        self.inner.append_message(conversation_id, message)

    def load_messages(self, conversation_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        self._require_conversation(conversation_id)
        return self.inner.load_messages(conversation_id, limit=limit)

    def count_messages(self, conversation_id: str) -> int:
        """One read: the conversation's record, owner checked, carries its count."""
        conversation = self.get_conversation(conversation_id)
        if conversation is None:
            raise NotFoundError(CONVERSATION_GONE)
        return conversation.message_count

    def clear_messages(self, conversation_id: str) -> None:
        self._require_conversation(conversation_id)
        self.inner.clear_messages(conversation_id)

    def chat_persistence(self, conversation_id: str) -> ChatPersistence:
        """The inner storage's hook (as ``inner.chat_persistence`` makes it), read once: the owner check
        finds the conversation, so it is not looked up a second time."""
        self._require_conversation(conversation_id)
        return ConversationPersistence(self.inner, conversation_id)

    # --- the rest -------------------------------------------------------------------------------
    def run_store(self) -> RunStore:
        return self.inner.run_store()

    def accounts(self) -> AccountStore:
        return self.inner.accounts()

    def transcription_store(self) -> OwnedTranscriptionStore:
        """The jobs of this owner's assets: another owner's job reads, and refuses Stop, as a missing one."""
        return OwnedTranscriptionStore(self.inner.transcription_store(), self._owns_asset)

    def _owns_asset(self, asset_id: str) -> bool:
        return self.asset_project_id(asset_id) is not None

    @property
    def data_dir(self) -> Path:
        return self.inner.data_dir

    def close(self) -> None:
        self.inner.close()


def _is_storage(view: OwnedStorage) -> Storage:
    """The view is a whole :class:`Storage` (mypy checks this line)."""
    return view
