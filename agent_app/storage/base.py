"""The storage interface the page, the stores and the tools depend on: shared pydantic types in and out, no
SQL or file path outside an implementation (but :meth:`Storage.media_file`, for the ``with`` block), so the SQLite file
(:class:`~agent_app.storage.sqlite.SqliteStorage`) and a shared PostgreSQL database
(:class:`~agent_app.storage.postgres.PostgresStorage`) serve the UI alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

from agent_app.runs.run_store import RunStore
from agent_app.session_stores import ChatPersistence
from agent_app.storage.accounts import AccountStore
from agent_app.storage.models import LOCAL_OWNER, Conversation, Owner, Project, Scene
from agent_app.transcript_edits import SegmentCorrection, TranscriptEdits
from agent_app.transcriptions.models import TranscriptionStore
from agent_app.types import ChatMessage, MediaAsset

if TYPE_CHECKING:
    from agent_app.media.transcript_cache import TranscriptStore
    from agent_app.storage.media_store import MediaStore


class StorageError(Exception):
    """A storage operation failed; the message is safe to show a user."""


class NotFoundError(StorageError):
    """The project, scene, asset or conversation named does not exist."""


# What a user is told when something was removed meanwhile (by another tab or process): in the app's words,
# never an internal id.
PROJECT_GONE = "This project no longer exists (it was deleted)"
SCENE_GONE = "This scene no longer exists"
ASSET_GONE = "This file is no longer in the project (it was removed)"
CONVERSATION_GONE = "This conversation no longer exists (it was deleted)"


class AssetRejectedError(StorageError):
    """An upload was refused (too large, not a media file); nothing of it was kept."""


@runtime_checkable
class Storage(Protocol):
    """Projects, scenes, media assets, conversations and messages.

    It is also a :class:`~agent_app.types.MediaLibrary` (``get_asset``/``media_file``/hashes/``transcripts``) across all
    projects; use :class:`~agent_app.storage.media_library.ProjectMediaLibrary` to hand a tool only
    the current project's media.
    """

    # --- projects -------------------------------------------------------------------------------
    def create_project(self, name: str, owner: Owner = LOCAL_OWNER) -> Project: ...

    def get_project(self, project_id: str) -> Project | None:
        """Any owner's project: the page reaches storage through
        :class:`~agent_app.storage.owned.OwnedStorage`, which answers only the signed-in owner's."""
        ...

    def list_projects(self, owner: Owner = LOCAL_OWNER) -> list[Project]: ...

    def give_unowned_projects(self, owner: Owner) -> int: ...

    def rename_project(self, project_id: str, name: str) -> Project: ...

    def delete_project(self, project_id: str) -> None:
        """The project with its scenes, assets (their files too), conversations, messages and runs."""
        ...

    # --- scenes ---------------------------------------------------------------------------------
    def create_scene(self, project_id: str, name: str) -> Scene: ...

    def get_scene(self, scene_id: str) -> Scene | None: ...

    def list_scenes(self, project_id: str) -> list[Scene]: ...

    def rename_scene(self, scene_id: str, name: str) -> Scene: ...

    # --- media ----------------------------------------------------------------------------------
    def import_asset(self, project_id: str, file_name: str, data: BinaryIO, *, max_bytes: int = ...) -> MediaAsset:
        """Store an upload of at most ``max_bytes`` (default: the ``AGENT_MAX_UPLOAD_MB`` default)."""
        ...

    def get_asset(self, asset_id: str) -> MediaAsset | None: ...

    def media_file(self, asset_id: str) -> AbstractContextManager[Path | None]: ...

    def has_media_file(self, asset_id: str) -> bool: ...

    def known_hash(self, asset_id: str) -> str | None: ...

    def content_hash(self, asset_id: str, on_progress: Callable[[float], None] | None = None) -> str | None: ...

    def playback_url(self, asset_id: str, mime_type: str | None, route_url: str | None) -> str | None: ...

    def transcripts(self) -> TranscriptStore: ...

    @property
    def media_store(self) -> MediaStore: ...

    def list_assets(self, project_id: str) -> list[MediaAsset]: ...

    def find_assets(
        self, project_id: str, *, name_contains: str = "", limit: int, offset: int = 0
    ) -> list[MediaAsset]: ...

    def count_assets(self, project_id: str, *, name_contains: str = "") -> int: ...

    def asset_project_id(self, asset_id: str) -> str | None: ...

    def remove_asset(self, asset_id: str) -> None: ...

    # --- transcript edits -----------------------------------------------------------------------
    def transcript_edits(self, asset_id: str) -> TranscriptEdits:
        """The user's corrections and speaker names for the asset's transcript (none: empty)."""
        ...

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None: ...

    def remove_correction(self, asset_id: str, start_ms: int) -> None: ...

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None:
        """Name the speaker label ``speaker`` (an empty ``name``: show the label again)."""
        ...

    # --- conversations --------------------------------------------------------------------------
    def create_conversation(self, project_id: str, title: str = "") -> Conversation: ...

    def get_conversation(self, conversation_id: str) -> Conversation | None: ...

    def list_conversations(self, project_id: str, *, limit: int | None = None) -> list[Conversation]: ...

    def search_conversations(self, project_id: str, words: Sequence[str], *, limit: int) -> list[Conversation]: ...

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation: ...

    def delete_conversation(self, conversation_id: str) -> None: ...

    def append_message(self, conversation_id: str, message: ChatMessage) -> None: ...

    def load_messages(self, conversation_id: str, *, limit: int | None = None) -> list[ChatMessage]: ...

    def count_messages(self, conversation_id: str) -> int: ...

    def clear_messages(self, conversation_id: str) -> None: ...

    def chat_persistence(self, conversation_id: str) -> ChatPersistence: ...

    def run_store(self) -> RunStore: ...

    def accounts(self) -> AccountStore: ...

    def transcription_store(self) -> TranscriptionStore: ...

    @property
    def data_dir(self) -> Path: ...

    def close(self) -> None: ...
