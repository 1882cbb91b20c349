"""One request's history fitted into the model's context window, and fitted again smaller if the provider
still refuses it as too long.

Why a retry and not an error: the estimate can be off (a tokenizer unlike the ratio's, a server whose
window is smaller than configured), and a provider's "too long" would otherwise end the conversation for
good, since every Retry sends the same history. The provider's refusal usually says how many tokens it
counted and its window (:func:`~agent_app.context_fit.retry_budget`), so the second request is fitted with
those and a margin, and later requests of the conversation keep the smaller budget
(:func:`~agent_app.context_fit.learned_budget`); a second refusal is the provider's failure as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agent_app.context_budget import ContextBudget
from agent_app.context_fit import FittedHistory, fit_history, learned_budget, retry_budget
from agent_app.types import AgentContext, ChatMessage, ToolSchema

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContextWindow:
    """What one request must fit: the whole history, the prompt and tools beside it, the model's budget."""

    messages: Sequence[ChatMessage]
    budget: ContextBudget
    system_prompt: str
    tool_schemas: Sequence[ToolSchema]
    context: AgentContext | None

    def fit(self) -> FittedHistory:
        """The history to send; raises :class:`~agent_app.context_fit.ContextTooLargeError` when even the
        latest turn does not fit."""
        return self._fit(learned_budget(self.budget, self.messages), None)

    def refit(self, refused: FittedHistory, refusal: str) -> FittedHistory:
        """The history for the one retry after the provider refused ``refused`` with the text ``refusal``."""
        smaller, scale = retry_budget(learned_budget(self.budget, self.messages), refused.report, refusal)
        logger.info(
            "The provider found the request too long (estimated %d of %d tokens); retrying within %d, scale %.2f",
            refused.report.estimated_tokens,
            refused.report.budget_tokens,
            smaller.input_tokens,
            scale,
        )
        return self._fit(smaller, scale)

    def _fit(self, budget: ContextBudget, scale: float | None) -> FittedHistory:
        return fit_history(
            self.messages,
            budget,
            system_prompt=self.system_prompt,
            tool_schemas=self.tool_schemas,
            context=self.context,
            scale=scale,
        )
