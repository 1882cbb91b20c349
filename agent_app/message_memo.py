"""Values worked out once per message object, for as long as the message lives.

Why: a run resends its whole history with every model request, and the messages it appends are the same
objects each time; estimating a message's tokens or converting it to a provider's wire form (a transcript's
JSON: tens of KB) would otherwise be paid again on every request, so a request's cost grew with the
conversation (``bench/bench_long_history.py``). Keyed by identity, not content: messages are
frozen models, and a changed copy (a stubbed result) is a new object with values of its own.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from agent_app.types import ChatMessage

T = TypeVar("T")


class MessageMemo(Generic[T]):
    """``memo(message)`` is ``compute(message)``, computed at the first call for that object. An entry goes when
    its message is collected (a weak reference's callback), so the memo holds no message alive and an id is
    never met again while its entry is there. Safe across threads without a lock (see ``_forget``)."""

    def __init__(self, compute: Callable[[ChatMessage], T]) -> None:
        self._compute = compute
        self._items: dict[int, tuple[weakref.ref[ChatMessage], T]] = {}

    def __call__(self, message: ChatMessage) -> T:
        key = id(message)
        item = self._items.get(key)
        if item is not None and item[0]() is message:
            return item[1]
        value = self._compute(message)
        self._items[key] = (weakref.ref(message, self._forget(key)), value)
        return value

    def __len__(self) -> int:
        return len(self._items)

    def _forget(self, key: int) -> Callable[[weakref.ref[ChatMessage]], None]:
        def forget(ref: weakref.ref[ChatMessage]) -> None:
            # No lock: dict operations hold the GIL, and no other object has this id until the message's
            # memory is freed, after this callback.
            item = self._items.get(key)
            if item is not None and item[0] is ref:
                del self._items[key]

        return forget
