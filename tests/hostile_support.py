"""Real faults for the hostile tests: a small tmpfs the test mounts (to fill it, or to turn it read-only) and
the root check for the tests that need one. CI runs as root; elsewhere these tests skip and say why."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

IS_ROOT = os.geteuid() == 0
requires_root = pytest.mark.skipif(not IS_ROOT, reason="mounts a tmpfs / makes a network namespace: needs root (CI)")


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def tmpfs(path: Path, size_kb: int) -> Iterator[Path]:
    """A tmpfs of ``size_kb`` KiB mounted at ``path`` for the block; unmounted after (lazily if still busy)."""
    path.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0755", "tmpfs", str(path))
    try:
        yield path
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            _run("mount", "-o", "remount,rw", str(path))
        try:
            _run("umount", str(path))
        except subprocess.CalledProcessError:
            _run("umount", "-l", str(path))


def fill(mount: Path) -> Path:
    """Fill the file system at ``mount`` to the last byte; return the filler file (delete it to free space)."""
    filler = mount / "filler.bin"
    with filler.open("wb", buffering=0) as handle:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return filler


def set_read_only(mount: Path, read_only: bool) -> None:
    """Remount the tmpfs at ``mount`` read-only (or back to read-write): what an admin, or the kernel after
    an I/O error, does to a data disk. Root ignores file modes, so ``chmod`` would not stop a CI run."""
    _run("mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(mount))


def close_connections_to(data_dir: Path) -> None:
    """Close this thread's connections of every open storage under ``data_dir``.

    AppTest runs the page in the test's own thread, so the page's SQLite connection is this thread's and
    holds the files open for writing, and the kernel refuses to remount a file system read-only under an
    open writer. In the server every session's script thread has its own, opened again on its next run.
    The process's write feed (the thread that sees other processes' writes) lets go of its file too.
    """
    from agent_app.storage.sqlite_database import SqliteDatabase

    gc.collect()  # a finished script thread's connection may wait in a reference cycle
    for found in gc.get_objects():
        if isinstance(found, SqliteDatabase) and Path(found.path).is_relative_to(data_dir):
            found.close()
            found.write_feed.release()  # its connection reads, but its WAL file is open for writing
