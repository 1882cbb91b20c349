"""Test support for the transcription tests: a project in the real SQLite storage with imported media,
and the tool environment a page or the orchestrator would hand the tool."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from agent_app.settings import load_settings
from agent_app.storage import ProjectMediaLibrary, SqliteStorage
from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
from agent_app.validation import parse_tool_args
from plugins.transcribe_video import TRANSCRIBE_VIDEO
from tests.run_support import wait_until

SETTINGS = ("TRANSCRIBE_BACKEND", "TRANSCRIBE_MODEL", "TRANSCRIBE_API_KEY", "TRANSCRIBE_BASE_URL",
            "LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY", "LLM_BASE_URL", "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")  # fmt: skip
"""Every setting or SDK environment variable that could redirect a transcription; tests clear them."""


def run_transcribe_tool(args: Mapping[str, object], env: ToolEnvironment) -> dict[str, Any]:
    """The ``transcribe_video`` tool run as the orchestrator runs it: the arguments validated by its model
    (:class:`~agent_app.validation.ToolArgumentsError` when they do not suit it), then the tool executed."""
    result: dict[str, Any] = TRANSCRIBE_VIDEO.execute(parse_tool_args(TRANSCRIBE_VIDEO, args), env)
    return result


@dataclass
class Workspace:
    """A project in the real storage with some imported assets, and the tool environment for it."""

    storage: SqliteStorage
    project_id: str
    assets: list[MediaAsset] = field(default_factory=list)
    progress: list[tuple[float, str]] = field(default_factory=list)

    def add(self, path: Path, name: str | None = None) -> MediaAsset:
        with path.open("rb") as handle:
            asset = self.storage.import_asset(self.project_id, name or path.name, handle)
        self.assets.append(asset)
        return asset

    def env(self, active: str | None = None) -> ToolEnvironment:
        return ToolEnvironment(
            context=AgentContext(project_id=self.project_id, media_assets=self.assets, active_asset_id=active),
            media=ProjectMediaLibrary(self.storage, self.project_id),
            data_dir=self.storage.data_dir,
            settings=load_settings(),  # as a run reads them when it starts
            report_progress=lambda fraction, message: self.progress.append((fraction, message)),
        )


def new_workspace(data_dir: Path) -> Workspace:
    storage = SqliteStorage(data_dir)
    return Workspace(storage, storage.create_project("test").id)


def transcribe_upload(path: Path, data_dir: Path, **args: object) -> tuple[MediaAsset, dict[str, Any]]:
    """``path`` uploaded into a fresh project (the real import: copy, probe, record) and transcribed by the
    ``transcribe_video`` tool with whatever backend the settings select (tests clear them: local)."""
    workspace = new_workspace(data_dir)
    asset = workspace.add(path)
    return asset, run_transcribe_tool(dict(args), workspace.env())


def transcribe_on_page(app: AppTest, asset_id: str, data_dir: Path, timeout: float = 180.0) -> None:
    """Press the panel's Transcribe and rerun the page once the job it queued has ended (the job runs on the
    server, as it would with the tab closed)."""
    app.button(key=f"transcript_{asset_id}_run").click().run()
    store = SqliteStorage(data_dir).transcription_store()

    def ended() -> bool:
        job = store.latest(asset_id)
        return job is not None and not job.active

    wait_until(ended, timeout, "the transcription job did not end")
    app.run()
