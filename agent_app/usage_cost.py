"""Token counts of answers and, when ``LLM_PRICES`` gives the model's price per million tokens, what they cost:
a creator paying for a hosted model wants to see what a conversation uses. An answer may take several
requests (a tool loop), so answers and conversations are sums.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_app.settings import Prices, Settings
from agent_app.types import ChatMessage, TokenUsage


def total_usage(messages: Iterable[ChatMessage]) -> TokenUsage | None:
    """The sum of the messages' token counts, ``None`` when none has one."""
    counted = [message.usage for message in messages if message.usage is not None]
    if not counted:
        return None
    return TokenUsage(
        input_tokens=sum(usage.input_tokens for usage in counted),
        output_tokens=sum(usage.output_tokens for usage in counted),
    )


def model_prices(settings: Settings) -> Prices | None:
    """The prices ``LLM_PRICES`` gives the configured ``LLM_MODEL``; ``None`` when it lists none (or is
    unusable: a price is a convenience, the captions then show tokens only)."""
    return (settings.llm_prices or {}).get(settings.llm_model or "")


def estimated_cost(usage: TokenUsage, prices: Prices) -> float:
    """Dollars for ``usage`` at ``prices``."""
    return (usage.input_tokens * prices.input + usage.output_tokens * prices.output) / 1_000_000


def usage_text(usage: TokenUsage, prices: Prices | None = None) -> str:
    """``1,234 tokens in · 56 out``, with ``· ≈ $0.0012`` when prices are known."""
    text = f"{usage.input_tokens:,} tokens in · {usage.output_tokens:,} out"
    if prices is None:
        return text
    cost = estimated_cost(usage, prices)
    if 0 < cost < 0.0001:
        return f"{text} · < $0.0001"
    return f"{text} · ≈ ${cost:.4f}" if cost < 0.01 else f"{text} · ≈ ${cost:,.2f}"
