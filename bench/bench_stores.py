"""What keeping the chat history as JSON in session state costs the page on every rerun.

The page reads ``ChatStore.messages`` at least once per Streamlit rerun. The store keeps JSON text
(see ``agent_app/session_stores.py`` for why), so each read parses it. Baseline, measured in the same run:
``json.loads`` of the same text, the least any reader of stored JSON must pay; the ratio says what
pydantic validation adds on top. Also shown: appending one message to a long history, against the
same baseline for that message.

Run: ``.venv/bin/python -m bench.bench_stores``
"""

from __future__ import annotations

import json
import timeit
from typing import Any

from agent_app.session_stores import ChatStore
from agent_app.types import ChatMessage, ToolCall, ToolResult

TURNS = 50
"""User turns in the history: each is user, assistant tool call, tool result, final answer."""

SEGMENTS = 1_000
"""Transcript segments in one tool result: about an hour of speech (~100 kB of JSON)."""


def build_history() -> list[ChatMessage]:
    segments = [{"startMs": i * 3000, "endMs": i * 3000 + 2900, "text": f"segment {i} " * 6} for i in range(SEGMENTS)]
    transcript = {"assetId": "a1", "segments": segments}
    messages: list[ChatMessage] = []
    for turn in range(TURNS):
        call = ToolCall(id=f"c{turn}", name="transcribe_video", args={"assetId": "a1"})
        result: dict[str, Any] = transcript if turn == 0 else {"assetId": "a1", "segments": segments[:5]}
        messages += [
            ChatMessage(role="user", content=f"What is said in clip {turn}?"),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(
                role="tool", content="done", tool_result=ToolResult(tool_call_id=call.id, name=call.name, result=result)
            ),
            ChatMessage(role="assistant", content="They talk about segments. " * 20),
        ]
    return messages


def best_of(statement: Any, number: int) -> float:
    """Seconds per call: the best of five repeats (the least disturbed by the machine)."""
    return min(timeit.repeat(statement, number=number, repeat=5)) / number


def main() -> None:
    history = build_history()
    state: dict[str, Any] = {}
    chat = ChatStore(state)
    chat.load_messages(history)
    raws = list(state["chat.messages"].values())
    total_bytes = sum(len(raw) for raw in raws)

    baseline_read = best_of(lambda: [json.loads(raw) for raw in raws], number=5)
    store_read = best_of(lambda: chat.messages, number=5)
    print(f"history: {len(history)} messages, {total_bytes / 1e6:.2f} MB of JSON")
    print(
        f"read all   json.loads baseline {baseline_read * 1e3:8.2f} ms | ChatStore.messages "
        f"{store_read * 1e3:8.2f} ms | ratio {store_read / baseline_read:5.2f}"
    )

    message = ChatMessage(role="user", content="one more question")
    one_raw = message.model_dump_json(by_alias=True, exclude_none=True)

    def add_one() -> None:
        chat.add_message(message.model_copy(update={"id": ChatMessage(role="user").id}))

    baseline_add = best_of(lambda: json.loads(one_raw), number=200)
    store_add = best_of(add_one, number=200)
    print(
        f"add one    json.loads baseline {baseline_add * 1e6:8.2f} us | ChatStore.add_message "
        f"{store_add * 1e6:8.2f} us | ratio {store_add / baseline_add:5.2f}"
    )


if __name__ == "__main__":
    main()
