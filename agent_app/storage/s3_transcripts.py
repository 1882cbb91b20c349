"""The transcript cache as objects beside the media in the bucket: one JSON object per :class:`CacheKey`, so a
new machine with an empty disk still finds every transcript (the SQLite cache keeps the same keys locally).

Keys are ``<prefix>/<content hash>/<backend>/<model>/<language or ->/<start>-<end or end>.json`` with each
part percent-encoded (a model may be a path); the page's "newest whole transcript of this content" is a
listing of the content's keys, and the object is fetched again only when the newest one changed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from urllib.parse import quote

from botocore.exceptions import ClientError

from agent_app.media.transcript_cache import CacheKey, slice_transcript
from agent_app.media.transcript_types import Transcript
from agent_app.storage.s3_errors import STORE_ERRORS, is_missing, store_error

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client

_FULL = "0-end.json"
"""The file name of a whole-media transcript (from 0 to the end)."""


def _part(text: str) -> str:
    return quote(text, safe="") or "-"


class S3Transcripts:
    """Transcripts in ``bucket`` under ``prefix`` (an :class:`~agent_app.media.transcript_cache.TranscriptStore`)."""

    def __init__(self, client: S3Client, bucket: str, prefix: str, endpoint: str) -> None:
        self._client, self._bucket, self._prefix, self._endpoint = client, bucket, prefix, endpoint
        self._newest: dict[str, tuple[str, str, Transcript]] = {}
        self._lock = threading.Lock()

    def _key(self, key: CacheKey) -> str:
        end = "end" if key.end_ms is None else str(key.end_ms)
        language = (key.language or "").lower()
        parts = (key.content_hash, key.backend, key.model, language)
        return f"{self._prefix}/{'/'.join(_part(part) for part in parts)}/{key.start_ms}-{end}.json"

    def _fetch(self, object_key: str) -> Transcript | None:
        try:
            body = self._client.get_object(Bucket=self._bucket, Key=object_key)["Body"].read()
        except ClientError as exc:
            if is_missing(exc):
                return None
            raise store_error(exc, self._endpoint) from exc
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc
        return Transcript.model_validate_json(body)

    def get(self, key: CacheKey) -> Transcript | None:
        """The transcript for exactly ``key``; else, for a range, the slice of a cached full transcript."""
        transcript = self._fetch(self._key(key))
        if transcript is not None or key.is_full:
            return transcript
        full = self._fetch(self._key(key.full()))
        return slice_transcript(full, key.start_ms, key.end_ms) if full is not None else None

    def put(self, key: CacheKey, transcript: Transcript, asset_id: str | None = None) -> None:
        metadata = {"asset-id": asset_id} if asset_id else {}
        try:
            self._client.put_object(
                Bucket=self._bucket,
                Key=self._key(key),
                Body=transcript.model_dump_json(by_alias=True).encode(),
                ContentType="application/json",
                Metadata=metadata,
            )
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc

    def latest_full(self, content_hash: str) -> Transcript | None:
        """The newest whole-media transcript of this content, whatever backend made it (for the page)."""
        try:
            listing = self._client.list_objects_v2(Bucket=self._bucket, Prefix=f"{self._prefix}/{_part(content_hash)}/")
        except STORE_ERRORS as exc:
            raise store_error(exc, self._endpoint) from exc
        full = [item for item in listing.get("Contents", []) if item["Key"].endswith("/" + _FULL)]
        if not full:
            return None
        newest = max(full, key=lambda item: (item["LastModified"], item["Key"]))
        object_key, etag = newest["Key"], str(newest.get("ETag", ""))
        with self._lock:
            remembered = self._newest.get(content_hash)
        if remembered is not None and remembered[:2] == (object_key, etag):
            return remembered[2]
        transcript = self._fetch(object_key)
        if transcript is not None:
            with self._lock:
                self._newest[content_hash] = (object_key, etag, transcript)
        return transcript
