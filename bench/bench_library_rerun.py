"""How the page's rerun time grows with the media library: AppTest reruns of the whole page in a project of
10 assets (the baseline, measured in the same run) and of 2,000 (target: ≤ 1.5x the 10-asset rerun).

Why it stays flat: the library draws one page (``library_panel.PAGE_SIZE`` files, newest first, one indexed
query), the player finds its asset by id, and the assistant's full asset list is read only when a
question is sent, never on a redraw.

Run: ``.venv/bin/python -m bench.bench_library_rerun`` (about a minute: 2,010 real imports first).
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from agent_app.storage import SqliteStorage
from bench.bench_page_rerun import compare_reruns
from testsupport.media_factory import tiny_wav

SIZES = (10, 2000)
TARGET_RATIO = 1.5


def seed(data_dir: Path, count: int) -> dict[str, str]:
    """A project of ``count`` assets, imported the way uploads are (copied, probed, recorded)."""
    storage = SqliteStorage(data_dir)
    project = storage.create_project(f"{count} assets")
    for index in range(count):
        storage.import_asset(project.id, f"take-{index:04d}.wav", io.BytesIO(tiny_wav(index)))
    storage.close()
    return {"project": project.id}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reruns", type=int, default=15, help="timed reruns per size (median reported)")
    compare_reruns(seed, SIZES, "asset", TARGET_RATIO, parser.parse_args().reruns)


if __name__ == "__main__":
    main()
