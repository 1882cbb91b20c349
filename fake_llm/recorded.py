"""What the fake server received: one :class:`RecordedRequest` per request, with its parsed body.

Why apart: the replies (computed from a request) and the server (recording it) both need the shape.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

CHAT = "chat"
TRANSCRIPTION = "transcription"
GEMINI = "gemini"


@dataclass(frozen=True)
class UploadedFile:
    """One file of a multipart request."""

    filename: str
    content_type: str
    data: bytes


@dataclass
class RecordedRequest:
    """A request as the fake server received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    endpoint: str | None
    model: str | None = None
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, UploadedFile] = field(default_factory=dict)
    streamed: bool = False
    """The answer went out as a stream (the request asked for one and the reply could be streamed)."""
    events_sent: int = 0
    """Stream events written so far (a ``[DONE]`` counts as one)."""
    event_times: list[float] = field(default_factory=list)
    """``time.perf_counter()`` right after each stream event was written (for latency benches)."""
    client_port: int = 0
    """The client's TCP port: requests with the same port came over one kept-alive connection."""
    closed_by_client: bool = False
    """The client closed the connection before the stream's end (a stopped run, a cancelled read)."""
    answered: threading.Event = field(default_factory=threading.Event)
    """Set once the server is done with the request (the whole answer sent, cut or abandoned)."""
    input_tokens: int | None = None
    """Counted by an endpoint with a ``context_limit`` (``None`` otherwise)."""
