"""Long conversations for the context-window tests: chat turns with transcript pages read in between.

The transcript pages are built by the tool's own result builder (``tool_result``) from a made-up transcript
of 5-minute pages, so they have the exact shape and size (~8,000 characters of text) the model receives.
Tool-call turns carry a Gemini ``provider_metadata`` with a thought signature, as stored Gemini turns do.
"""

from __future__ import annotations

import base64

from agent_app.media import Transcript, TranscriptSegment
from agent_app.types import AgentContext, ChatMessage, MediaAsset, ToolCall, ToolResult
from plugins.transcribe_video import tool_result

ASSET = MediaAsset(id="asset-interview", name="interview.mp4", kind="video", duration_ms=3_600_000)
CONTEXT = AgentContext(project_id="project-1", media_assets=[ASSET], active_asset_id=ASSET.id)
PAGE_MS = 300_000
SENTENCE = "so the next shot we planned was the wide one over the harbour at dawn with the boats coming in"


def transcript_page(page: int) -> dict[str, object]:
    """Page ``page`` (5 minutes) of the interview as ``transcribe_video`` returns it."""
    start = page * PAGE_MS
    words = SENTENCE.split()
    segments = [
        TranscriptSegment(
            start_ms=start + i * 4_000,
            end_ms=start + i * 4_000 + 3_800,
            text=" ".join(words[(i + j) % len(words)] for j in range(12)),
        )
        for i in range(75)
    ]
    transcript = Transcript(
        duration_ms=ASSET.duration_ms or 0,
        language="en",
        segments=segments,
        backend="fake",
        model="fake",
        start_ms=start,
        end_ms=start + PAGE_MS,
    )
    return tool_result(ASSET, transcript, cached=True)


def gemini_turn(call: ToolCall, index: int) -> dict[str, object]:
    """A stored Gemini turn's metadata: the call's part with its thought signature (what must ride along)."""
    signature = base64.b64encode(f"signature-{index}".encode()).decode()
    part = {"functionCall": {"name": call.name, "args": call.args}, "thoughtSignature": signature}
    return {"gemini": {"content": {"role": "model", "parts": [part]}, "callIds": {}}}


def page_turn(page: int, index: int) -> list[ChatMessage]:
    """A user asking for a page, the call (with its signature), the result and the answer: four messages."""
    call = ToolCall(
        id=f"call_page_{index}",
        name="transcribe_video",
        args={"assetId": ASSET.id, "startMs": page * PAGE_MS, "endMs": (page + 1) * PAGE_MS},
    )
    return [
        ChatMessage(role="user", content=f"Read me minutes {page * 5} to {page * 5 + 5} of the interview."),
        ChatMessage(role="assistant", tool_calls=[call], provider_metadata=gemini_turn(call, index)),
        ChatMessage(
            role="tool",
            content="transcribe_video finished",
            tool_result=ToolResult(tool_call_id=call.id, name=call.name, result=transcript_page(page)),
        ),
        ChatMessage(role="assistant", content=f"Minutes {page * 5}-{page * 5 + 5}: they plan the harbour shot."),
    ]


def chat_turn(index: int) -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content=f"Question {index}: which take of the harbour shot is best for the intro?"),
        ChatMessage(
            role="assistant",
            content=f"Answer {index}: the third take, because the light is warmer and the boats are in frame.",
        ),
    ]


def long_conversation(total: int = 1_000, pages: int = 10) -> list[ChatMessage]:
    """``total`` messages (a multiple of two), with ``pages`` transcript pages spread evenly through them."""
    messages: list[ChatMessage] = []
    page_every = max(1, (total - 4 * pages) // 2 // max(pages, 1))
    page = 0
    index = 0
    while len(messages) < total:
        if page < pages and index % page_every == 0 and total - len(messages) >= 4:
            messages.extend(page_turn(page, index))
            page += 1
        else:
            messages.extend(chat_turn(index))
        index += 1
    return messages[:total]
