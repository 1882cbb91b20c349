"""The first transcriptions of a freshly started process, all at once: run as
``python -m tests.first_transcriptions <data_dir> <media_file> <count>`` in a new interpreter (nothing
imported or loaded yet), it imports ``media_file`` into ``count`` projects and has ``count`` threads each
find the ``transcribe_video`` tool and run it at the same moment, as sessions do right after a restart.

Prints one JSON object: each thread's result or error, and every load of an offline model the
library saw (its path, start and end times, from a counting subclass of ``faster_whisper.WhisperModel``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import faster_whisper

from agent_app.settings import load_settings
from agent_app.storage import ProjectMediaLibrary, SqliteStorage
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
from agent_app.validation import parse_tool_args

_loads: list[tuple[str, float, float]] = []
_loads_lock = threading.Lock()


class CountingWhisperModel(faster_whisper.WhisperModel):  # type: ignore[misc]
    """The library's model, recording which model each instance (one load) is and when it was made."""

    def __init__(self, model: str, *args: Any, **kwargs: Any) -> None:
        started = time.monotonic()
        super().__init__(model, *args, **kwargs)
        with _loads_lock:
            _loads.append((model, started, time.monotonic()))


def _transcribe(barrier: threading.Barrier, asset: MediaAsset, env: ToolEnvironment) -> dict[str, Any]:
    barrier.wait()
    try:
        tool = build_tool_registry(load_settings().enabled_tools).get("transcribe_video")
        if tool is None:
            return {"error": "transcribe_video is not registered"}
        return {"result": tool.execute(parse_tool_args(tool, {"assetId": asset.id}), env)}
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the test
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(data_dir: Path, media: Path, count: int) -> dict[str, Any]:
    faster_whisper.WhisperModel = CountingWhisperModel
    storage = SqliteStorage(data_dir)
    jobs = []
    for index in range(count):
        project = storage.create_project(f"project {index}")
        with media.open("rb") as handle:
            asset = storage.import_asset(project.id, media.name, handle)
        context = AgentContext(project_id=project.id, media_assets=[asset])
        jobs.append((asset, ToolEnvironment(context=context, media=ProjectMediaLibrary(storage, project.id))))
    barrier = threading.Barrier(count)
    with ThreadPoolExecutor(count) as pool:
        outcomes = list(pool.map(lambda job: _transcribe(barrier, *job), jobs))
    return {"outcomes": outcomes, "loads": _loads}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))))
