"""What a run is given besides its model client, its tools and its stores: one frozen options object.

Why one object: the optional parts of a run (the media its tools read, who watches it, how Stop is asked,
the loop's bounds) travel together from the run's job to the loop, and the loop's constructor stays as
short as what every caller must give. The listener is a protocol, so the loop never knows who watches it
(a server run records events that any session reads; a test collects them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent_app.cancellation import Cancellation
from agent_app.settings import Settings
from agent_app.tool_calls import MAX_RESULT_CHARS
from agent_app.types import ChatMessage, ExecutionState, MediaLibrary, ToolCall

MAX_ITERATIONS = 8
"""The spec's hard cap on provider round trips in one run."""

MAX_CALLS_PER_ROUND = 10
"""Tool calls run per model turn; the rest of a bigger turn are answered with an error without running.
The iteration cap bounds round trips, not calls: a model asking for 50 transcriptions at once would keep
the user waiting for minutes. Every call still gets an answer (providers require one per call), and the
model can ask again for what it still needs."""


class OrchestratorListener(Protocol):
    """What a run records as events (the page draws them live). Every method is called synchronously from
    :meth:`Orchestrator.run`; an exception raised here is logged and otherwise ignored."""

    def on_status(self, status: ExecutionState, active_tool: str | None) -> None:
        """The agent store's status or active tool changed."""
        ...

    def on_message(self, message: ChatMessage) -> None:
        """``message`` was appended to the history and the chat store."""
        ...

    def on_tool_progress(self, call: ToolCall, fraction: float, message: str) -> None:
        """The running tool reported progress (``fraction`` clamped to 0..1)."""
        ...

    def on_text(self, delta: str) -> None:
        """A piece of the answer arrived (a streaming client); the finished message follows with ``on_message``."""
        ...


@dataclass(frozen=True)
class OrchestratorOptions:
    """The optional parts of a run; the defaults are the spec's bounds with no media, watcher or Stop."""

    media: MediaLibrary | None = None
    """The project's media, handed to every tool."""
    data_dir: Path | None = None
    """Where tools keep derived files (the transcript cache), handed to every tool."""
    settings: Settings = field(default_factory=Settings)
    """The run's settings, handed to every tool (the transcription backend); default: every default."""
    listener: OrchestratorListener | None = None
    cancellation: Cancellation = field(default_factory=Cancellation)
    """The run's Stop: once set, the model's stream is closed, a running tool told, open calls answered."""
    max_iterations: int = MAX_ITERATIONS
    max_result_chars: int = MAX_RESULT_CHARS
    max_calls_per_round: int = MAX_CALLS_PER_ROUND

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if self.max_calls_per_round < 1:
            raise ValueError("max_calls_per_round must be at least 1")
