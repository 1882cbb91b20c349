"""How the transcript panel's redraw grows with the transcript: AppTest reruns of the panel for a one-minute
transcript (15 segments, the baseline measured in the same run) and a one-hour one (900 segments), plain
and with a search typed (target: the hour ≤ 2x the minute).

Why it stays flat: the transcript is read once per run (one indexed query and one JSON parse, ~1 ms for an
hour); only one page of segments is drawn (``transcript_view.SEGMENTS_PER_PAGE``), and the SRT/WebVTT/text
downloads are written when clicked, not on every redraw.

Run: ``.venv/bin/python -m bench.bench_transcript_panel`` (about half a minute).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.storage import SqliteStorage
from agent_app.types import MediaAsset
from testsupport.media_factory import tiny_wav

SIZES = {"1 minute": (60_000, 15), "1 hour": (3_600_000, 900)}
TARGET_RATIO = 2.0
SEARCH = "harbour crates"


def panel_page(data_dir: str, project_id: str, asset_json: str, query: str) -> None:
    """The panel as the page draws it, under a player at the playhead (an AppTest script)."""
    from pathlib import Path

    import streamlit as st

    from agent_app.storage import ProjectMediaLibrary, SqliteStorage
    from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
    from agent_app.ui.transcript_panel import render_transcript_panel

    asset = MediaAsset.model_validate_json(asset_json)
    storage = SqliteStorage(Path(data_dir))
    if query:
        st.session_state.setdefault(f"transcript_{asset.id}_search", query)
    env = ToolEnvironment(
        context=AgentContext(project_id=project_id, media_assets=[asset], playback_time_ms=30_000),
        media=ProjectMediaLibrary(storage, project_id),
        data_dir=Path(data_dir),
    )
    render_transcript_panel(asset, env, lambda ms: None)


def transcript(duration_ms: int, count: int) -> Transcript:
    step = duration_ms // count
    segments = [
        TranscriptSegment(
            start_ms=i * step,
            end_ms=i * step + step - 100,
            text=f"Line {i}: the harbour boats come in at dawn and the crew unloads {'crates' if i % 7 else 'nets'}.",
        )
        for i in range(count)
    ]
    return Transcript(duration_ms=duration_ms, language="en", segments=segments, backend="local", model="bench")


def seed(data_dir: Path, name: str, duration_ms: int, count: int) -> tuple[str, MediaAsset]:
    """A project with one small file whose cached transcript has ``count`` segments."""
    storage = SqliteStorage(data_dir)
    project = storage.create_project(name)
    source = data_dir.parent / f"{name}.wav"
    source.write_bytes(tiny_wav(count))
    with source.open("rb") as handle:
        asset = storage.import_asset(project.id, f"{name}.wav", handle)
    with storage.media_file(asset.id) as path:  # the local disk's file: it outlives the block
        pass
    assert path is not None
    cache = TranscriptCache(data_dir)
    made = transcript(duration_ms, count)
    cache.put(CacheKey(cache.content_hash(path), made.backend, made.model), made, asset.id)
    storage.close()
    return project.id, asset


def rerun_seconds(args: tuple[str, str, str, str], reruns: int) -> float:
    """The median rerun of the panel (after a first run that opens everything)."""
    app = AppTest.from_function(panel_page, args=args, default_timeout=120)
    app.run()
    if app.exception:
        raise RuntimeError(f"the panel failed: {[e.value for e in app.exception]}")
    timings = []
    for _ in range(reruns):
        started = time.perf_counter()
        app.run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reruns", type=int, default=15, help="timed reruns per case (median reported)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        seeded = {label: seed(data_dir, label.replace(" ", "-"), *size) for label, size in SIZES.items()}
        cases = {
            (label, query): (str(data_dir), project_id, asset.model_dump_json(), query)
            for label, (project_id, asset) in seeded.items()
            for query in ("", SEARCH)
        }
        rerun_seconds(next(iter(cases.values())), 2)  # warm imports and caches before measuring anything
        results = {case: rerun_seconds(args, options.reruns) for case, args in cases.items()}
    base = results[("1 minute", "")]
    print(f"transcript panel redraw (AppTest, median of {options.reruns}), ratios vs the 1-minute transcript")
    print(f"{'transcript':>11} {'search':>16} {'redraw (ms)':>12} {'x':>6}")
    for (label, query), seconds in results.items():
        print(f"{label:>11} {query or '-':>16} {seconds * 1000:>12.1f} {seconds / base:>6.2f}")
    worst = max(results[("1 hour", q)] / results[("1 minute", q)] for q in ("", SEARCH))
    verdict = "within" if worst <= TARGET_RATIO else "OVER"
    print(f"target: 1-hour redraw ≤ {TARGET_RATIO:.0f}x the 1-minute one (same search): {worst:.2f}x, {verdict}")


if __name__ == "__main__":
    main()
