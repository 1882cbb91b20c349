"""What the chat says about the model's context window: where the history stops being sent, how full it is.

Why on the page: trimming is silent otherwise, and a creator who asks about something said two hours of
conversation ago should see that the model no longer reads it (and that it is still here, above the mark).
Both come from the :class:`~agent_app.types.ContextReport` of the latest answer, stored with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_app.types import ChatMessage, ContextReport
from agent_app.ui.formatting import count_of

CUT_MARKER = "Earlier messages are not sent to the model any more"


def latest_context_report(messages: Sequence[ChatMessage]) -> ContextReport | None:
    """The report of the latest answer that has one (the request that produced it)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.context is not None:
            return message.context
    return None


def context_summary(report: ContextReport) -> str:
    """``Context 85% full (about 11,900 of 14,000 tokens) · 604 earlier messages not sent · ...``."""
    share = min(100, round(100 * report.estimated_tokens / report.budget_tokens))
    parts = [f"Context {share}% full (about {report.estimated_tokens:,} of {report.budget_tokens:,} tokens)"]
    if report.left_out_messages:
        parts.append(f"{count_of(report.left_out_messages, 'earlier message')} not sent")
    if report.stubbed_results:
        parts.append(f"{count_of(report.stubbed_results, 'older tool result')} summarized")
    return " · ".join(parts)


def cut_marker_html() -> str:
    """The quiet line drawn above the oldest message still sent."""
    return f'<div class="cut">✂ {CUT_MARKER}</div>'
