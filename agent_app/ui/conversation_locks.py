"""One assistant run at a time per conversation, across the browser sessions of this server.

Two tabs can have the same conversation open. If both ran the assistant at once, their messages
would interleave in storage (tab B's question between tab A's tool call and its result), a history
every provider rejects, and B would "recover" A's still-running call as interrupted. A run therefore
holds its conversation's lock; a second tab waits for it, then continues from the stored history.
The locks live in this process: one ``streamlit run`` serves all sessions of a data directory.
"""

from __future__ import annotations

import threading

_registry_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}


def conversation_lock(conversation_id: str) -> threading.Lock:
    """The lock of ``conversation_id`` (created on first use; a few bytes per conversation ever run)."""
    with _registry_guard:
        return _locks.setdefault(conversation_id, threading.Lock())
