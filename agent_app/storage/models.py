"""The records storage keeps besides the shared types (projects, scenes, conversations), on the same camelCase
wire base so an export or API can serialise them without a second set of names.
"""

from __future__ import annotations

from agent_app.types import WireModel


class Project(WireModel):
    """A creator's project: the unit that owns scenes, media and conversations."""

    id: str
    name: str
    created_at: int


class Scene(WireModel):
    """A scene of a project, in the order the creator added them."""

    id: str
    project_id: str
    name: str
    position: int
    created_at: int


class Conversation(WireModel):
    """A chat with the assistant inside a project. ``title`` is the first user message, shortened."""

    id: str
    project_id: str
    title: str
    created_at: int
    updated_at: int
    message_count: int = 0
    question_count: int = 0
    """The user's own messages: what a person counts in a chat (tool traffic is not a question)."""
