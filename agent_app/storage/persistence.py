"""The chat store's write-through hook for one stored conversation (the spec's ``persist`` pattern)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_app.types import ChatMessage

if TYPE_CHECKING:
    from agent_app.storage.base import Storage


@dataclass(frozen=True)
class ConversationPersistence:
    """Writes each message the moment the chat store appends it, so a crash loses nothing said.

    Satisfies ``agent_app.session_stores.ChatPersistence``. ``messages_cleared`` empties *this*
    conversation; starting a new chat is a new conversation instead, so the old one stays listed.
    """

    storage: Storage
    conversation_id: str

    def message_added(self, message: ChatMessage) -> None:
        self.storage.append_message(self.conversation_id, message)

    def messages_cleared(self) -> None:
        self.storage.clear_messages(self.conversation_id)
