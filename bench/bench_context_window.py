"""What fitting a long conversation into the model's context window costs per request.

Builds the request the chat handler builds — system prompt, the history fitted into a 16k-token window
(:class:`agent_app.context_fit.ContextWindow`: estimate, stubs, turns left out) and the adapter's
conversion to its wire format — for a 10-message conversation and for a 1,000-message one holding ten
transcript pages (~8,000 characters of text each), both providers, in the same run. The network is not
involved: the "send" converts the fitted history and returns.

Printed: median milliseconds per request for each, the difference and the ratio, for the fitting alone
(estimate, stubs, the cut) and with each adapter's conversion of what is sent (within 16k tokens, about
500 short messages of the long conversation). Target: the 1,000-message request takes at most 5 ms more
than the 10-message one.

Run: ``.venv/bin/python -m bench.bench_context_window``
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from agent_app.context_budget import context_budget
from agent_app.context_fit import ContextWindow
from agent_app.media import Transcript, TranscriptSegment
from agent_app.prompt import build_system_prompt
from agent_app.providers.gemini_request import messages_to_gemini
from agent_app.providers.openai_request import messages_to_openai
from agent_app.types import (
    AgentContext,
    ChatMessage,
    MediaAsset,
    ToolCall,
    ToolParameter,
    ToolResult,
    ToolSchema,
)
from plugins.transcribe_video import tool_result

WINDOW = 16_000
ROUNDS = 200
TARGET_MS = 5.0
ASSET = MediaAsset(id="asset-1", name="interview.mp4", duration_ms=3_600_000)
CONTEXT = AgentContext(project_id="bench", media_assets=[ASSET], active_asset_id=ASSET.id)
TOOLS = [
    ToolSchema(
        name="transcribe_video",
        description="Transcribe a range of an asset.",
        parameters=[ToolParameter(key=k, type="number") for k in ("startMs", "endMs")],
    )
]
SENTENCE = "so the next shot we planned was the wide one over the harbour at dawn with the boats coming in"


def page(number: int) -> object:
    start = number * 300_000
    words = SENTENCE.split()
    segments = [
        TranscriptSegment(
            start_ms=start + i * 4_000, end_ms=start + i * 4_000 + 3_800, text=" ".join(words[i % 8 : i % 8 + 12])
        )
        for i in range(75)
    ]
    transcript = Transcript(
        duration_ms=3_600_000, segments=segments, backend="b", model="m", start_ms=start, end_ms=start + 300_000
    )
    return tool_result(ASSET, transcript, cached=True)


def conversation(total: int, pages: int) -> list[ChatMessage]:
    """``total`` messages of questions and answers, ``pages`` of them transcript-page turns, then a question."""
    messages: list[ChatMessage] = []
    every = max(1, total // max(pages, 1) // 2)
    index = 0
    while len(messages) < total - 1:
        messages.append(ChatMessage(role="user", content=f"Question {index}: which take of the harbour is best?"))
        if index % every == 0 and index // every < pages:
            call = ToolCall(id=f"call_{index}", name="transcribe_video", args={"startMs": index})
            result = ToolResult(tool_call_id=call.id, name=call.name, result=page(index // every))
            messages.append(ChatMessage(role="assistant", tool_calls=[call]))
            messages.append(ChatMessage(role="tool", tool_result=result))
        messages.append(ChatMessage(role="assistant", content=f"Answer {index}: the third take, warmer light."))
        index += 1
    return [*messages[: total - 1], ChatMessage(role="user", content="What do they say at 42:00?")]


def build(messages: list[ChatMessage], convert: Callable[[str, list[ChatMessage]], object]) -> None:
    """The handler's request building, without the network."""
    prompt = build_system_prompt(CONTEXT, TOOLS)
    window = ContextWindow(context_budget("any", WINDOW), prompt, TOOLS, CONTEXT)
    convert(prompt, window.fit(messages).messages)


def median_ms(messages: list[ChatMessage], convert: Callable[[str, list[ChatMessage]], object]) -> float:
    for _ in range(10):
        build(messages, convert)
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        build(messages, convert)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def to_gemini(prompt: str, messages: list[ChatMessage]) -> object:
    return messages_to_gemini(messages)


def no_conversion(prompt: str, messages: list[ChatMessage]) -> object:
    return messages


CONVERTERS: dict[str, Callable[[str, list[ChatMessage]], object]] = {
    "fitting only": no_conversion,
    "openai-compatible": messages_to_openai,
    "gemini": to_gemini,
}


def main() -> None:
    short, long = conversation(10, 1), conversation(1_000, 10)
    print(f"Request building within a {WINDOW:,}-token window, median of {ROUNDS} (ms per request)")
    for name, convert in CONVERTERS.items():
        small, large = median_ms(short, convert), median_ms(long, convert)
        verdict = "within" if large - small <= TARGET_MS else "OVER"
        print(
            f"  {name:18s} 10 messages {small:6.2f} ms | 1,000 messages + 10 transcript pages {large:6.2f} ms | "
            f"+{large - small:.2f} ms ({large / small:.1f}x): {verdict} the {TARGET_MS:.0f} ms target"
        )


if __name__ == "__main__":
    main()
