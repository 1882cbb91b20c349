"""Accepting an upload as a media asset: copy it to disk in bounded chunks, prove it is media, then keep it in
the media store (the local folder, or an object store).

The user's file name only contributes a lower-cased extension from a fixed allow-list; the file on
disk gets a generated name, so no upload can choose where it is written. The size limit is checked
while copying (an oversized upload is never fully written), and PyAV (FFmpeg) decides whether the
bytes really are audio or video — an extension proves nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import av

from agent_app.storage.base import AssetRejectedError, StorageError
from agent_app.storage.names import display_file_name
from agent_app.types import MediaAsset, MediaKind, new_id

if TYPE_CHECKING:
    from agent_app.storage.media_store import MediaStore

CHUNK_BYTES = 1024 * 1024
PART_SUFFIX = ".part"

MIME_BY_EXTENSION: dict[str, str] = {
    "mp4": "video/mp4",
    "mov": "video/quicktime",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "m4a": "audio/mp4",
    "m4v": "video/mp4",
    "3gp": "video/3gpp",
    "ts": "video/mp2t",
    "mts": "video/mp2t",
    "m2ts": "video/mp2t",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/ogg",
    "flac": "audio/flac",
    "aac": "audio/aac",
}
"""The upload types the page accepts, and the MIME type each is served with. Phones record MP4/MOV/3GP,
screen recorders MP4/MKV/WebM, camcorders MPEG-TS (.mts/.m2ts), podcasts and voice notes MP3/M4A/Ogg/Opus/
FLAC/WAV; browsers cannot play every one of them, but all are transcribed (PyAV reads them)."""

ALLOWED_EXTENSIONS: tuple[str, ...] = tuple(MIME_BY_EXTENSION)
NOT_SUPPORTED = f"is not a supported media file (allowed: {', '.join(ALLOWED_EXTENSIONS)})"
"""What the page says of any upload whose name does not make it one of :data:`ALLOWED_EXTENSIONS`."""

# Video containers holding only sound are served as audio, so the browser shows an audio player.
_AUDIO_MIME_OF_VIDEO_CONTAINER = {
    "mp4": "audio/mp4",
    "m4v": "audio/mp4",
    "3gp": "audio/3gpp",
    "webm": "audio/webm",
    "mkv": "audio/x-matroska",
}

# Demuxers that read still images: FFmpeg opens a PNG as a one-frame "video", which is not media.
_IMAGE_FORMAT_MARKERS = ("image2", "_pipe", "gif", "apng", "webp")


@dataclass(frozen=True)
class ProbedMedia:
    """What PyAV found in an imported file."""

    kind: MediaKind
    duration_ms: int | None


def extension_of(file_name: str) -> str:
    """The allowed, lower-cased extension of ``file_name``; raise :class:`AssetRejectedError` otherwise."""
    suffix = Path(file_name).suffix.lower().lstrip(".")
    if suffix not in MIME_BY_EXTENSION:
        raise AssetRejectedError(f"“{file_name}” {NOT_SUPPORTED}")
    return suffix


def mime_type_for(extension: str, kind: MediaKind) -> str:
    """The MIME type to serve a file of this (allowed) extension and probed kind with."""
    if kind == "audio":
        return _AUDIO_MIME_OF_VIDEO_CONTAINER.get(extension, MIME_BY_EXTENSION[extension])
    return MIME_BY_EXTENSION[extension]


def _format_megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MB" if size >= 1024 * 1024 else f"{size} bytes"


def partial_path(media_dir: Path, stored_name: str) -> Path:
    """Where an upload is copied before it is proved to be media: named with this process's id, so a
    later start can tell a dead process's leftover (kill -9 mid-copy) from another live upload."""
    return media_dir / f"{stored_name}.{os.getpid()}{PART_SUFFIX}"


def remove_stale_parts(media_dir: Path) -> None:
    """Delete the partial uploads (and downloads, with their SDK's own temporary suffix after ``.part``) of
    processes that no longer run. Those in progress (in this process or another live one on the same folder)
    are left alone."""
    for part in media_dir.glob(f"*{PART_SUFFIX}*"):
        owner = part.name.split(PART_SUFFIX, 1)[0].rsplit(".", 1)[-1]
        if owner.isdigit() and (int(owner) == os.getpid() or _is_running(int(owner))):
            continue
        with contextlib.suppress(OSError):  # a folder that turned read-only: left for a later start, never fatal
            part.unlink(missing_ok=True)


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def copy_limited(data: BinaryIO, target: Path, limit_bytes: int, display_name: str) -> tuple[int, str]:
    """Copy ``data`` into the new file ``target`` in chunks; stop and delete it past ``limit_bytes``.

    Returns the number of bytes written and their SHA-256 (hashed on the way: the transcript cache's key, so
    the file is never read again for it). An empty upload is refused too: it cannot be media.
    """
    written = 0
    digest = hashlib.sha256()
    try:
        with target.open("xb") as out:
            while chunk := data.read(CHUNK_BYTES):
                written += len(chunk)
                if written > limit_bytes:
                    raise AssetRejectedError(
                        f"“{display_name}” is too large: the limit is {_format_megabytes(limit_bytes)} "
                        "(setting AGENT_MAX_UPLOAD_MB)"
                    )
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    if written == 0:
        target.unlink(missing_ok=True)
        raise AssetRejectedError(f"“{display_name}” is empty")
    return written, digest.hexdigest()


def _is_cover_art(stream: av.stream.Stream) -> bool:
    """An MP3/M4A album cover is stored as a one-picture video stream; it does not make a video."""
    disposition = stream.disposition
    return bool(disposition & (av.stream.Disposition.attached_pic | av.stream.Disposition.still_image))


MIN_BITS_PER_SECOND = 100
"""Below this, a duration is one the file cannot hold: real audio (even silence in FLAC, Opus at its lowest
rate) takes kilobits per second. A 15 KB WAV whose header says 1,193 hours would need 0.03 bit/s; its
duration is a lie of the header, so it is stored as unknown."""


def plausible_duration_ms(duration_ms: int | None, size_bytes: int) -> int | None:
    """``duration_ms``, or ``None`` when ``size_bytes`` of media cannot last that long."""
    if duration_ms is None or duration_ms * MIN_BITS_PER_SECOND > size_bytes * 8 * 1000:
        return None
    return duration_ms


def probe_media(path: Path, display_name: str) -> ProbedMedia:
    """Open ``path`` with PyAV and report its kind and duration (unknown when the file is too small to
    hold it); refuse anything without audio/video."""
    not_media = AssetRejectedError(f"“{display_name}” is not a readable audio or video file")
    try:
        container = av.open(str(path), mode="r")
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise not_media from exc
    with contextlib.closing(container):
        format_name = container.format.name or ""
        if any(marker in format_name for marker in _IMAGE_FORMAT_MARKERS):
            raise not_media
        has_video = any(not _is_cover_art(stream) for stream in container.streams.video)
        has_audio = len(container.streams.audio) > 0
        if not (has_video or has_audio):
            raise AssetRejectedError(f"“{display_name}” contains no audio or video stream")
        duration_ms = plausible_duration_ms(_duration_ms(container), path.stat().st_size)
    return ProbedMedia(kind="video" if has_video else "audio", duration_ms=duration_ms)


def _duration_ms(container: av.container.InputContainer) -> int | None:
    """The container's duration, else its longest stream's; ``None`` when FFmpeg cannot tell."""
    if container.duration is not None and container.duration > 0:
        return int(container.duration // 1000)  # AV_TIME_BASE is microseconds
    longest: float = 0.0
    for stream in container.streams:
        if stream.duration is not None and stream.time_base is not None:
            longest = max(longest, float(stream.duration * stream.time_base))
    return int(longest * 1000) if longest > 0 else None


def import_media_file(
    store: MediaStore, file_name: str, data: BinaryIO, max_bytes: int, record: Callable[[MediaAsset, str], None]
) -> MediaAsset:
    """Copy an upload of at most ``max_bytes`` into the store's local staging folder under a generated name,
    probe it, keep it in ``store`` and ``record(asset, stored_name)`` its row (each backend its own SQL); all or
    nothing.

    Raises :class:`AssetRejectedError` (with a message for the user) for a file of the wrong type, too large,
    empty or unreadable as media, :class:`StorageError` when the disk or the store refuses it; nothing is left
    behind.
    """
    display_name = display_file_name(file_name)
    if "\x00" in file_name:  # a crafted name (C would read it as ending at the NUL): no name of a file
        raise AssetRejectedError(f"“{display_name}” {NOT_SUPPORTED}")
    extension = extension_of(display_name)
    asset_id = new_id()
    stored_name = f"{asset_id}.{extension}"
    partial = partial_path(store.staging_dir, stored_name)
    try:
        size, sha256 = copy_limited(data, partial, max_bytes, display_name)
        try:
            probed = probe_media(partial, display_name)
            asset = MediaAsset(
                id=asset_id,
                name=display_name,
                kind=probed.kind,
                duration_ms=probed.duration_ms,
                size_bytes=size,
                mime_type=mime_type_for(extension, probed.kind),
            )
            store.save(stored_name, partial, sha256)
            try:
                record(asset, stored_name)
            except BaseException:
                with contextlib.suppress(StorageError):  # the store out of reach now: the object is an orphan
                    store.delete(stored_name)
                raise
        finally:
            partial.unlink(missing_ok=True)
    except OSError as exc:  # disk full, read-only, I/O error: said without the server's paths
        raise StorageError(f"writing it failed: {exc.strerror or type(exc).__name__}") from exc
    return asset
