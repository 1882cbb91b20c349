"""``GET /api/media/{id}`` on the real server (``streamlit run app.py``), over raw sockets so every byte of
the request line reaches it as written: every kind of bad id, and a table of malformed and abusive ``Range``
headers. Nothing but an asset's own file is ever served, no answer is a 500, no answer names a path, and
no range makes the server send more than a bounded multiple of the file.

Another project's asset id is served: ids are 128-bit random capabilities and the page has no login (any
visitor can open any project in the sidebar), so projects are not an access boundary; what is checked is
that an id serves exactly its own file and nothing else.
"""

from __future__ import annotations

import io
import socket
from pathlib import Path
from urllib.parse import quote

import pytest

from agent_app.storage import SqliteStorage
from tests.media_samples import make_wav
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = pytest.mark.slow


def raw_get(server: StreamlitServer, target: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """``GET target`` with the request line exactly as given; ``(status, head, body)``."""
    port = int(server.base_url.rsplit(":", 1)[1])
    lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())  # UTF-8 bytes as they come
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, body


def bad_ids(asset_id: str, stored_name: str, data_dir: Path) -> list[str]:
    """Request targets that must never serve anything (each is a full path after the host)."""
    base = "/api/media/"
    traversals = ["../agent.sqlite3", "../../etc/passwd", "..", ".", f"../media/{stored_name}"]
    ids = [
        "",
        "0" * 32,  # well-formed, unknown
        asset_id.upper(),
        asset_id[:-1],
        asset_id + "0",
        asset_id + ".wav",
        stored_name,  # the file's name on disk
        asset_id + "%00",
        asset_id + "%00.wav",
        asset_id + "%0a",
        asset_id + "%20",
        "%20" + asset_id,
        quote("０" * 32),  # full-width digits
        "x" * 8000,
        "%" * 40,
        "%zz" + asset_id,
    ]
    for path in traversals:
        ids += [
            path,
            quote(path, safe=""),  # encoded
            quote(quote(path, safe=""), safe=""),  # double-encoded
            path.replace("/", "\\"),
            quote(path.replace("/", "\\"), safe=""),
            path.replace(".", "%2e"),
            path.replace("/", "%2f").replace(".", "%2E"),
            path.replace(".", "%252e").replace("/", "%252f"),
            path.replace("/", "%c0%af"),  # overlong UTF-8 slash
            path.replace("/", "%ef%bc%8f"),  # full-width solidus
        ]
    absolute = [str(data_dir / "agent.sqlite3"), str(data_dir / "media" / stored_name), "/etc/passwd", "C:\\x"]
    ids += [quote(p, safe="") for p in absolute] + [quote(quote(p, safe=""), safe="") for p in absolute]
    targets = [base + value for value in ids]
    targets += [f"{base}{asset_id}/..%2F..%2Fagent.sqlite3", f"{base}{asset_id}/", f"{base}/{asset_id}"]
    targets += ["/api/media/" + p for p in absolute] + ["/api/media//etc/passwd", "/api/media/../media/" + stored_name]
    return targets


def range_table(size: int) -> list[tuple[str, set[int]]]:
    """``(Range header, acceptable statuses)``: 200 (ignored), 206, 400 (malformed) or 416 (unsatisfiable)."""
    ok = {200, 206}
    bad = {200, 400, 416}
    return [
        ("bytes=0-0", {206}),
        ("bytes=-1", {206}),
        ("bytes=0-", {206}),
        (f"bytes={size - 1}-", {206}),
        ("bytes=0-99999999999999999999", {206}),
        (f"bytes={size}-", {416}),
        ("bytes=99999999999999999999999-", {416}),
        ("bytes=5-2", bad),
        ("bytes=-0", bad),
        ("bytes=--1", bad),
        ("bytes=-", bad),
        ("bytes=", bad),
        ("bytes", bad),
        ("", ok),
        ("bytes=a-b", bad),
        ("bytes=1-2-3", bad),
        ("bytes=0x10-0x20", bad),
        ("bytes=1e3-2e3", bad),
        ("bytes=+1-+2", ok | bad),  # Starlette reads int("+1"): lenient, harmless (the bytes asked for)
        ("bytes= 1 - 2 ", ok | bad),
        ("bytes=1-2;", ok | bad),
        ("items=0-10", bad),
        ("BYTES=0-10", ok | bad),
        ("bytes=0-10, bytes=20-30", ok | bad),
        ("bytes=\u0661-\u0662", ok | bad),  # Arabic-Indic digits that int() accepts: lenient, harmless
        ("bytes=0-1,2-3", {206}),
        ("bytes=" + ",".join(["0-"] * 100), ok | bad),  # 100 whole-file ranges: merged, not sent 100 times
        ("bytes=" + ",".join(f"{i}-{i}" for i in range(100)), ok | bad),  # 100 one-byte parts
        ("bytes=" + ",".join(["0-1"] * 5000), ok | bad),  # past any sane range count
        ("bytes=" + "1" * 5000 + "-", bad),
        ("bytes=0-" + "9" * 5000, ok | bad),
    ]


def test_media_route_serves_only_an_assets_own_file_whatever_the_id_or_range(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    storage = SqliteStorage(data_dir)
    wav = make_wav(tmp_path / "voice.wav", seconds=0.3).read_bytes()
    first = storage.create_project("first")
    second = storage.create_project("second")
    asset = storage.import_asset(first.id, "voice.wav", io.BytesIO(wav))
    other_bytes = make_wav(tmp_path / "other.wav", seconds=0.2).read_bytes()
    other = storage.import_asset(second.id, "other.wav", io.BytesIO(other_bytes))
    gone = storage.import_asset(second.id, "gone.wav", io.BytesIO(other_bytes))
    removed = storage.import_asset(second.id, "removed.wav", io.BytesIO(other_bytes))
    stored_name = next(p.name for p in (data_dir / "media").iterdir() if p.name.startswith(asset.id))
    next(p for p in (data_dir / "media").iterdir() if p.name.startswith(gone.id)).unlink()  # file gone from disk
    storage.remove_asset(removed.id)
    storage.close()
    database = (data_dir / "agent.sqlite3").read_bytes()[:100]

    targets = bad_ids(asset.id, stored_name, data_dir)
    targets += [f"/api/media/{gone.id}", f"/api/media/{removed.id}"]
    table = range_table(len(wav))
    with run_streamlit({"AGENT_DATA_DIR": str(data_dir)}, tmp_path) as server:
        status, _, body = raw_get(server, f"/api/media/{asset.id}")
        assert (status, body) == (200, wav)
        status, _, body = raw_get(server, f"/api/media/{other.id}")  # another project's asset: its own bytes
        assert (status, body) == (200, other_bytes)
        status, _, body = raw_get(server, f"/api/media/{asset.id}?path=../agent.sqlite3&id={other.id}")
        assert (status, body) == (200, wav)  # the query string is not read
        status, _, body = raw_get(server, f"/api/media/{asset.id}#frag")
        assert (status, body) == (200, wav)  # the server's HTTP parser (httptools) drops a fragment: the asset itself

        served = []
        for target in targets:
            status, head, body = raw_get(server, target)
            if status == 200 and body in (wav, other_bytes):
                served.append(target)
            assert status != 500 and status < 500, target
            assert b"SQLite format 3" not in body and database[:16] not in body and b"root:" not in body, target
            assert str(data_dir).encode() not in head + body and str(tmp_path).encode() not in body, target
        assert not served, served

        for header, allowed in table:
            status, head, body = raw_get(server, f"/api/media/{asset.id}", {"Range": header} if header else {})
            assert status in allowed, (header[:60], status, body[:200])
            assert len(body) <= 2 * len(wav) + 20_000, (header[:60], len(body))  # bounded, never 100x the file
            if status == 206 and b"multipart" not in head.lower():
                assert body in wav, header[:60]
        assert "Traceback" not in server.output()
    print(f"{len(targets)} bad ids, {len(table)} range headers")
