"""Test support for the transcription tests: a project in the real SQLite storage with imported media,
and the tool environment a page or the orchestrator would hand the tool."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

from agent_app.storage import ProjectMediaLibrary, SqliteStorage
from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
from agent_app.validation import parse_tool_args
from plugins.transcribe_video import TRANSCRIBE_VIDEO
from tests.media_factory import FloatArray, speak

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


@functools.cache
def spoken(
    sentences: tuple[str, ...],
    rate: int,
    *,
    voice: str = "en-us",
    words_per_minute: int = 150,
    lead_ms: int = 500,
    gap_ms: int = 700,
) -> tuple[FloatArray, list[tuple[int, int, str]]]:
    """Sentences spoken by espeak-ng at ``rate`` (made once per process, shared by every test), and where
    each sentence's sound really is: ``(onset_ms, offset_ms, text)`` measured on the samples, without the
    silence espeak puts around its words."""
    parts: list[FloatArray] = [np.zeros(rate * lead_ms // 1000, dtype=np.float32)]
    truth: list[tuple[int, int, str]] = []
    position = len(parts[0])
    for index, sentence in enumerate(sentences):
        pcm, pcm_rate = speak(sentence, voice=voice, words_per_minute=words_per_minute)
        pcm = resample(pcm, pcm_rate, rate)
        sound = np.flatnonzero(np.abs(pcm) > 0.01)
        truth.append(((position + sound[0]) * 1000 // rate, (position + sound[-1]) * 1000 // rate, sentence))
        parts.append(pcm)
        position += len(pcm)
        parts.append(np.zeros(rate * (gap_ms if index < len(sentences) - 1 else lead_ms) // 1000, dtype=np.float32))
        position += len(parts[-1])
    return np.concatenate(parts), truth


def placed_speech(
    rate: int, placements: list[tuple[int, str]], total_ms: int
) -> tuple[FloatArray, list[tuple[int, int]]]:
    """Silence of ``total_ms`` with each sentence's sound starting exactly at its given millisecond;
    returns the samples and the true ``(onset_ms, offset_ms)`` of each."""
    samples = np.zeros(rate * total_ms // 1000, dtype=np.float32)
    truth = []
    for at_ms, sentence in placements:
        pcm, pcm_rate = speak(sentence)
        pcm = resample(pcm, pcm_rate, rate)
        sound = np.flatnonzero(np.abs(pcm) > 0.01)
        pcm = pcm[sound[0] : sound[-1] + 1]
        start = rate * at_ms // 1000
        samples[start : start + len(pcm)] = pcm
        truth.append((at_ms, at_ms + len(pcm) * 1000 // rate))
    return samples, truth


def resample(samples: FloatArray, rate: int, new_rate: int) -> FloatArray:
    """FFmpeg's band-limited resampling (via PyAV), as a recorder at ``new_rate`` would have captured it:
    linear interpolation would alias highs into an 8 kHz telephone band and make it unfairly hard."""
    if rate == new_rate:
        return samples
    frame = av.AudioFrame.from_ndarray(
        np.ascontiguousarray(samples, dtype=np.float32)[None], format="flt", layout="mono"
    )
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="flt", layout="mono", rate=new_rate)
    out = [*resampler.resample(frame), *resampler.resample(None)]
    return np.concatenate([np.asarray(f.to_ndarray(), dtype=np.float32).reshape(-1) for f in out])
