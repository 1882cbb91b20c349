"""A throwaway PostgreSQL server for a test session or a bench: ``initdb`` and ``pg_ctl`` (Debian's
``postgresql-15``) into a temporary folder, on a free loopback port, with its unix socket in that folder;
databases are made from a template, so each test gets a fresh one in a few milliseconds.

PostgreSQL refuses to run as root: as root, its programs run as the ``postgres`` OS user (``runuser``).
Password authentication over TCP, as a hosted database would ask, and trust on the socket for setup.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testsupport.streamlit_server import free_port

PG_BIN_DIRS = tuple(Path(f"/usr/lib/postgresql/{major}/bin") for major in (17, 16, 15))
OS_USER = "postgres"
STARTUP_TIMEOUT = 60.0


class PostgresUnavailableError(RuntimeError):
    """``initdb``/``pg_ctl`` are missing or the server would not start: the message says what to install."""


def pg_bin_dir() -> Path:
    """Where ``initdb`` and ``pg_ctl`` are: ``AGENT_TEST_PG_BIN`` when set, else Debian's versioned folder."""
    candidates = [Path(os.environ["AGENT_TEST_PG_BIN"])] if os.environ.get("AGENT_TEST_PG_BIN") else []
    found = shutil.which("pg_ctl")
    candidates += [*PG_BIN_DIRS, *([Path(found).parent] if found else [])]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise PostgresUnavailableError(
        "PostgreSQL's initdb and pg_ctl were not found (looked in "
        f"{', '.join(str(c) for c in candidates)}): install Debian's postgresql-15 "
        "(scripts/test.sh does), or point AGENT_TEST_PG_BIN at their folder"
    )


@dataclass
class PostgresServer:
    """A running server: ``url(name)`` is a ``postgresql://`` URL of one of its databases."""

    folder: Path
    port: int
    bin_dir: Path
    password: str
    _counter: int = field(default=0)

    @property
    def socket_dir(self) -> Path:
        return self.folder

    def url(self, database: str) -> str:
        return f"postgresql://{OS_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def admin_url(self) -> str:
        """The server's ``postgres`` database over its unix socket (trusted): for making and dropping databases."""
        return f"postgresql://{OS_USER}@/postgres?host={self.socket_dir}&port={self.port}"

    def execute(self, *statements: str) -> None:
        """Run ``statements`` one by one outside a transaction (``CREATE DATABASE`` needs that)."""
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)

    def create_database(self, template: str = "template0") -> str:
        """A new, empty-but-for-``template`` database; its name."""
        self._counter += 1
        name = f"t_{os.getpid()}_{self._counter}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def pg_ctl(self, *args: str) -> None:
        """Run ``pg_ctl`` on this server's folder."""
        _run_as_postgres([str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-w", *args], self.folder)

    def start(self) -> None:
        self._start_with("start")

    def restart(self) -> None:
        """Stop (fast: every connection is cut) and start again on the same port, as a server upgrade would."""
        self._start_with("-m", "fast", "restart")

    def _start_with(self, *action: str) -> None:
        # The log file takes the server's output: a pipe of ours would stay open as long as the server runs.
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.socket_dir}"
        self.pg_ctl("-l", str(self.folder / "server.log"), "-t", str(int(STARTUP_TIMEOUT)), "-o", options, *action)

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "stop")


def _run_as_postgres(command: list[str], cwd: Path) -> None:
    """Run ``command`` as the ``postgres`` OS user when we are root (PostgreSQL will not run as root)."""
    if os.geteuid() == 0:
        command = ["runuser", "-u", OS_USER, "--", *command]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=STARTUP_TIMEOUT)
    if result.returncode != 0:
        raise PostgresUnavailableError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")


def _init_cluster(folder: Path, bin_dir: Path, password: str) -> None:
    password_file = folder / "password"
    password_file.write_text(password + "\n")
    command = [str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", OS_USER, "--pwfile", str(password_file)]
    command += ["--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8"]
    command += ["--no-sync"]
    _run_as_postgres(command, folder)
    with (folder / "data" / "postgresql.conf").open("a") as conf:
        # A test server: nothing to keep across a crash, so no waiting for the disk.
        conf.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n")


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A fresh server in its own temporary folder, stopped (``pg_ctl stop -m fast``) and removed afterwards."""
    bin_dir = pg_bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="agent-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, user=OS_USER)
        password = secrets.token_urlsafe(18)  # a server of this run only: a password made for it
        _init_cluster(folder, bin_dir, password)
        server = _started(folder, bin_dir, password)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _started(folder: Path, bin_dir: Path, password: str) -> PostgresServer:
    """The server started on a free port (another taken between the look and the start: tried again)."""
    failure: PostgresUnavailableError | None = None
    for _ in range(3):
        server = PostgresServer(folder=folder, port=free_port(), bin_dir=bin_dir, password=password)
        try:
            server.start()
        except PostgresUnavailableError as exc:
            failure = exc
            time.sleep(0.2)
            continue
        return server
    log = folder / "server.log"
    detail = log.read_text(errors="replace")[-2000:] if log.exists() else "no log"
    raise PostgresUnavailableError(f"PostgreSQL did not start: {detail}") from failure
