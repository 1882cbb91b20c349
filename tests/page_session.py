"""A page session without a browser: Streamlit's own websocket protocol (``/_stcore/stream``, protobuf
``BackMsg``/``ForwardMsg``) spoken by a test, so dozens of sessions cost threads, not Chromium tabs.

The session asks for one run of the page, as a browser opening it does, and returns everything the
server sent until that run finished, as text the test can search.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import ClientConnection, connect

RUN_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class PageRun:
    """One run of the page as a client saw it: the text of every message, and how the run ended."""

    text: str
    finished_status: int


def connect_session(base_url: str) -> ClientConnection:
    """An open page session on the server at ``base_url`` (the session exists once the socket does)."""
    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    return connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=RUN_TIMEOUT_SECONDS)  # type: ignore[list-item]


def run_page(socket: ClientConnection, query_string: str = "") -> PageRun:
    """Ask for one run of the page and collect what it draws until the run finishes."""
    request = BackMsg()
    request.rerun_script.query_string = query_string
    request.rerun_script.page_script_hash = ""
    socket.send(request.SerializeToString())
    texts: list[str] = []
    while True:
        message = ForwardMsg()
        message.ParseFromString(socket.recv(timeout=RUN_TIMEOUT_SECONDS))
        texts.append(str(message))
        if message.WhichOneof("type") == "script_finished":
            return PageRun("\n".join(texts), int(message.script_finished))
