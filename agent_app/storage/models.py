"""The records storage keeps besides the shared types (projects, scenes, conversations), on the same camelCase
wire base so an export or API can serialise them without a second set of names.
"""

from __future__ import annotations

from agent_app.types import WireModel


class Owner(WireModel):
    """Who a project belongs to: the sign-in's issuer and subject (OpenID Connect's ``iss`` and ``sub``, which
    together name one account for good). :data:`LOCAL_OWNER` (both empty) is nobody signed in: the projects
    of the app without sign-in, and those made before sign-in was configured."""

    issuer: str
    subject: str


LOCAL_OWNER = Owner(issuer="", subject="")


class Project(WireModel):
    """A creator's project: the unit that owns scenes, media and conversations, and belongs to one owner."""

    id: str
    name: str
    created_at: int
    owner_issuer: str = ""
    owner_subject: str = ""

    @property
    def owner(self) -> Owner:
        return Owner(issuer=self.owner_issuer, subject=self.owner_subject)


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


class ApiToken(WireModel):
    """A personal API token for ``POST /api/agent/chat``, as listed to its owner: never the token itself (only
    its hash is stored, :mod:`agent_app.sign_in.api_tokens`)."""

    id: str
    name: str
    created_at: int
