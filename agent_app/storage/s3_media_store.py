"""Media files and the transcript cache in an S3-compatible bucket (``AGENT_MEDIA_STORE=s3://bucket/prefix``),
through boto3, so a replaced container or a second replica sees every upload.

An upload is proved to be media on the local disk first (as with the local store), then sent as a multipart
upload read from that file (never whole in memory); a failed multipart upload is aborted by boto3's transfer
manager, and one cut short by a killed process is aborted by a later start once it is a day old. The player
reads a presigned URL (Range requests work, as with any S3 GET), renewed at half its lifetime. A transcription
downloads the object to a temporary file: PyAV and faster-whisper seek freely in a file (an MP4's index may
sit at its end), and one sequential download costs less than many ranged reads over the network.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from agent_app.file_hash import sha256_of
from agent_app.storage.media_import import PART_SUFFIX
from agent_app.storage.s3_errors import STORE_ERRORS, is_missing, store_error
from agent_app.storage.s3_transcripts import S3Transcripts

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client

_log = logging.getLogger(__name__)

PART_BYTES = 8 * 1024 * 1024
"""The multipart upload's part size: what boto3 holds in memory per part in flight."""
STALE_UPLOAD_AGE = timedelta(days=1)
"""A multipart upload begun this long ago belongs to a process that died (no upload takes a day)."""
_HASH_KEY = "sha256"


@dataclass(frozen=True)
class S3Location:
    """A bucket and the key prefix under which the app keeps its objects ("" for the bucket's root)."""

    bucket: str
    prefix: str = ""


def parse_store_url(url: str) -> S3Location:
    """``s3://bucket/some/prefix`` as its bucket and ``"some/prefix"`` (no slashes at the prefix's ends)."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return S3Location(bucket, prefix.strip("/"))


class S3MediaStore:
    """The files under ``prefix/media/`` and the transcripts under ``prefix/transcripts/`` of the bucket.

    Credentials and region come from boto3's standard chain (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_DEFAULT_REGION``, a role); ``endpoint_url`` names a store that is not AWS. Presigned player URLs
    last ``url_seconds``; uploads larger than ``part_bytes`` go in parts of that size (S3's least is 5 MiB)."""

    def __init__(
        self,
        location: S3Location,
        staging_dir: Path,
        *,
        endpoint_url: str | None,
        url_seconds: int,
        part_bytes: int = PART_BYTES,
    ) -> None:
        self._bucket, self._prefix = location.bucket, location.prefix.strip("/")
        self._endpoint = endpoint_url or "AWS S3"
        self._staging_dir = Path(staging_dir)
        self._staging_dir.mkdir(parents=True, exist_ok=True)
        self._url_seconds = url_seconds
        self._transfer = TransferConfig(
            multipart_threshold=part_bytes, multipart_chunksize=part_bytes, max_concurrency=4
        )
        config = Config(
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            signature_version="s3v4",
            s3={"addressing_style": "path" if endpoint_url else "auto"},
        )
        # A session of its own: boto3's default session is shared process-wide and not thread-safe.
        self._client: S3Client = boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
        self._hashes: dict[str, str] = {}
        self._urls: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._transcripts = S3Transcripts(self._client, self._bucket, self._key("transcripts"), self._endpoint)
        self.abort_stale_uploads(STALE_UPLOAD_AGE)

    def _key(self, *parts: str) -> str:
        return "/".join(part for part in (self._prefix, *parts) if part)

    def _media_key(self, stored_name: str) -> str:
        return self._key("media", stored_name)

    @property
    def staging_dir(self) -> Path:
        return self._staging_dir

    def save(self, stored_name: str, proved: Path, sha256: str) -> None:
        try:
            self._client.upload_file(
                str(proved),
                self._bucket,
                self._media_key(stored_name),
                ExtraArgs={"Metadata": {_HASH_KEY: sha256}},
                Config=self._transfer,
            )
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc
        finally:
            proved.unlink(missing_ok=True)
        with self._lock:
            self._hashes[stored_name] = sha256

    def delete(self, stored_name: str) -> None:
        try:
            self._client.delete_object(Bucket=self._bucket, Key=self._media_key(stored_name))
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc
        with self._lock:
            self._hashes.pop(stored_name, None)
            self._urls.pop(stored_name, None)

    def _head_hash(self, stored_name: str) -> str | None:
        """The object's recorded SHA-256 ("" when it has none), ``None`` when there is no object."""
        try:
            head = self._client.head_object(Bucket=self._bucket, Key=self._media_key(stored_name))
        except ClientError as exc:
            if is_missing(exc):
                return None
            raise store_error(exc, self._endpoint) from exc
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc
        return head.get("Metadata", {}).get(_HASH_KEY, "")

    def has(self, stored_name: str) -> bool:
        with self._lock:
            if stored_name in self._hashes:
                return True
        return self._head_hash(stored_name) is not None

    @contextlib.contextmanager
    def _downloaded(self, stored_name: str) -> Iterator[Path | None]:
        # Named as an upload's partial copy is (this process's id, .part): a later start removes it if we die.
        target = self._staging_dir / f"{stored_name}.get-{os.urandom(6).hex()}.{os.getpid()}{PART_SUFFIX}"
        try:
            try:
                self._client.download_file(self._bucket, self._media_key(stored_name), str(target))
            except ClientError as exc:
                if not is_missing(exc):
                    raise store_error(exc, self._endpoint) from exc
                yield None
                return
            except STORE_ERRORS as exc:
                raise store_error(exc, self._endpoint) from exc
            yield target
        finally:
            target.unlink(missing_ok=True)

    def local_file(self, stored_name: str) -> AbstractContextManager[Path | None]:
        return self._downloaded(stored_name)

    def known_hash(self, stored_name: str) -> str | None:
        with self._lock:
            known = self._hashes.get(stored_name)
        if known is not None:
            return known
        digest = self._head_hash(stored_name)
        if digest:  # an object's bytes never change under its name: remembered for the process's life
            with self._lock:
                self._hashes[stored_name] = digest
        return digest or None

    def content_hash(self, stored_name: str, on_progress: Callable[[float], None] | None = None) -> str | None:
        known = self.known_hash(stored_name)
        if known is not None:
            return known
        with self.local_file(stored_name) as path:  # an object put there by other means: read once
            if path is None:
                return None
            with path.open("rb") as handle:
                digest = sha256_of(handle, on_progress)
        with self._lock:
            self._hashes[stored_name] = digest
        return digest

    def playback_url(self, stored_name: str, mime_type: str | None, route_url: str | None) -> str | None:
        """A presigned GET of the object, the same one until half its lifetime is gone: the player keeps its
        address across reruns, and a rerun after that (or the player's own call when its URL expired) renews it."""
        now = time.monotonic()
        with self._lock:
            cached = self._urls.get(stored_name)
        if cached is not None and now - cached[1] < self._url_seconds / 2:
            return cached[0]
        params = {"Bucket": self._bucket, "Key": self._media_key(stored_name)}
        if mime_type:
            params["ResponseContentType"] = mime_type
        try:
            url = self._client.generate_presigned_url("get_object", Params=params, ExpiresIn=self._url_seconds)
        except STORE_ERRORS as exc:  # signing is local: only missing credentials get here
            raise store_error(exc, self._endpoint) from exc
        with self._lock:
            self._urls[stored_name] = (url, now)
        return url

    def transcripts(self) -> S3Transcripts:
        return self._transcripts

    def abort_stale_uploads(self, older_than: timedelta) -> int:
        """Abort the multipart uploads under our prefix begun more than ``older_than`` ago (a killed process's:
        their parts are no object, but the store keeps and bills them); how many. Best effort: a store that
        cannot be reached now is left for a later start."""
        cutoff = datetime.now(UTC) - older_than
        aborted = 0
        try:
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self._bucket, Prefix=self._key("media") + "/"
            )
            for page in pages:
                for upload in page.get("Uploads", []):
                    if upload["Initiated"] <= cutoff:
                        self._client.abort_multipart_upload(
                            Bucket=self._bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
                        aborted += 1
        except STORE_ERRORS as exc:
            _log.warning("Unfinished uploads are left for a later start: %s", store_error(exc, self._endpoint))
        return aborted
