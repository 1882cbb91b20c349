"""What a failed call to the object store says to a user: the store's address and the S3 error code, never a
credential or a signed URL."""

from __future__ import annotations

from boto3.exceptions import Boto3Error
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

from agent_app.storage.base import StorageError


def store_error(exc: Exception, endpoint: str) -> StorageError:
    """A user-grade sentence for a failed call: the store's address and the S3 error code, never a key."""
    if isinstance(exc, EndpointConnectionError | ConnectionError) or "Connect" in type(exc).__name__:
        return StorageError(f"the media store at {endpoint} cannot be reached; try again when it is back")
    if isinstance(exc, NoCredentialsError):
        return StorageError(
            f"the media store at {endpoint} cannot be used: no credentials (set AWS_ACCESS_KEY_ID and"
            " AWS_SECRET_ACCESS_KEY, or give the machine a role)"
        )
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "an error")
        return StorageError(f"the media store at {endpoint} refused it ({code})")
    cause = exc.__cause__ or getattr(exc, "last_exception", None) or exc.__context__
    if isinstance(cause, Exception) and cause is not exc:
        return store_error(cause, endpoint)
    return StorageError(f"the media store at {endpoint} failed ({type(exc).__name__})")


STORE_ERRORS = (BotoCoreError, ClientError, Boto3Error, ConnectionError)
"""What boto3 raises when a call fails (a refused request, a store out of reach, an aborted transfer)."""


def is_missing(exc: ClientError) -> bool:
    """Whether a failed call means "no such object" (HEAD answers a bare 404)."""
    return str(exc.response.get("Error", {}).get("Code")) in {"404", "NoSuchKey", "NotFound"}
