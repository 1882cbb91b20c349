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
import os
import struct
import tempfile
from pathlib import Path

from agent_app.storage import SqliteStorage
from bench.bench_page_rerun import rerun_seconds

SIZES = (10, 2000)
TARGET_RATIO = 1.5


def tiny_wav(index: int) -> bytes:
    """0.1 s of 16 kHz mono silence whose last sample carries ``index`` (every file distinct)."""
    samples = b"\x00\x00" * 1599 + struct.pack("<h", index % 32_000)
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, 16_000, 32_000, 2, 16) + b"data" + struct.pack("<I", len(samples))
    return header + samples


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        os.environ["AGENT_DATA_DIR"] = str(data_dir)
        sessions = {size: seed(data_dir, size) for size in SIZES}
        rerun_seconds(sessions[SIZES[0]], 2)  # warm imports and caches before measuring anything
        results = {size: rerun_seconds(sessions[size], args.reruns) for size in SIZES}
    base_first, base_rerun = results[SIZES[0]]
    print(f"page rerun time by library size (AppTest, median of {args.reruns}), ratios vs {SIZES[0]} assets")
    print(f"{'assets':>7} {'open (ms)':>10} {'x':>6} {'rerun (ms)':>11} {'x':>6}")
    for size, (first, rerun) in results.items():
        opened = f"{first * 1000:>10.1f} {first / base_first:>6.2f}"
        print(f"{size:>7} {opened} {rerun * 1000:>11.1f} {rerun / base_rerun:>6.2f}")
    ratio = results[SIZES[-1]][1] / base_rerun
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(f"target: {SIZES[-1]}-asset rerun ≤ {TARGET_RATIO}x the {SIZES[0]}-asset one: {ratio:.2f}x, {verdict}")


if __name__ == "__main__":
    main()
