"""A conversation as a file to keep or share: Markdown to read, JSON with every tool call and result.

Markdown is for people: the questions and answers in order, each tool call as a short line (its name,
arguments and how it ended), times in the reader's time zone. JSON is for programs: the conversation's
record and its messages exactly as stored (camelCase, the spec's wire shape), tool calls and results
included, provider metadata left out (it is opaque replay data for one provider, not content).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import PurePath

from agent_app.clock import elapsed_text
from agent_app.storage import Conversation
from agent_app.types import ChatMessage
from agent_app.ui.formatting import local_time
from agent_app.ui.markdown_text import typed_markdown

_UNSAFE_FILE_CHARS = re.compile(r"[^\w\- .]+")


def export_file_stem(title: str) -> str:
    """A file name stem from the title: letters, digits, spaces, dots and dashes only, never empty."""
    stem = " ".join(_UNSAFE_FILE_CHARS.sub(" ", title).split())[:60].strip(" .")
    return PurePath(stem).name or "conversation"


def _tool_lines(message: ChatMessage, results: dict[str, ChatMessage]) -> list[str]:
    lines = []
    for call in message.tool_calls or []:
        arguments = json.dumps(call.args, ensure_ascii=False)
        answer = results.get(call.id)
        result = answer.tool_result if answer is not None else None
        if result is None:
            outcome = "no result (interrupted)"
        elif result.error is not None:
            outcome = f"failed: {result.error}"
        else:
            outcome = f"done in {elapsed_text(result.duration_ms)}" if result.duration_ms is not None else "done"
        lines.append(f"- Tool `{call.name}` `{arguments}` — {outcome}")
    return lines


def to_markdown(title: str, messages: Sequence[ChatMessage], zone: tzinfo) -> str:
    """The conversation for a reader. The user's text reads as typed, as text (its Markdown characters escaped,
    line breaks kept: a ``# `` is no heading, and it is no code block either); the assistant's Markdown is kept
    as it was written."""
    results = {m.tool_result.tool_call_id: m for m in messages if m.role == "tool" and m.tool_result is not None}
    out = [f"# {title or 'Conversation'}", ""]
    for message in messages:
        when = local_time(message.timestamp, zone)
        if message.role == "user":
            out += [f"## You · {when}", "", typed_markdown(message.content), ""]
        elif message.role == "assistant":
            out.append(f"## Assistant · {when}")
            out.append("")
            if message.content:
                out += [message.content, ""]
            tools = _tool_lines(message, results)
            if tools:
                out += [*tools, ""]
        elif message.role == "system":
            out += [f"## System · {when}", "", typed_markdown(message.content), ""]
    return "\n".join(out).rstrip() + "\n"


def to_json(conversation: Conversation | None, title: str, messages: Sequence[ChatMessage]) -> str:
    """The conversation record and its messages as stored (camelCase), with tool calls and results."""
    record = conversation.model_dump(by_alias=True) if conversation is not None else {"title": title}
    body = {
        "conversation": record,
        "messages": [m.model_dump(by_alias=True, exclude_none=True, exclude={"provider_metadata"}) for m in messages],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
