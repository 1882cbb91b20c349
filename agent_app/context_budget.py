"""How many tokens a request may carry, and how many a history holds, counted offline and cheaply.

Why no tokenizer: the exact ones fetch their vocabulary at first use (tiktoken) or live behind the
provider's API (Gemini's ``countTokens``). A conservative bytes-per-token ratio is enough because every
answer reports the tokens the provider really counted, and the next request scales by that (:func:`usage_scale`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_core import to_json

from agent_app.types import ChatMessage, ToolSchema

DEFAULT_WINDOW_TOKENS = 8_192
"""An unknown model's window: small enough for any current chat model, local ones included."""

OUTPUT_SHARE = 1 / 8
"""Share of the window kept for the answer when ``LLM_MAX_OUTPUT_TOKENS`` is not set..."""

MAX_OUTPUT_RESERVE = 8_192
"""...but never more than this: a 1M-token window needs no 128k tokens of room for a chat answer."""

BYTES_PER_TOKEN = 3.0
"""UTF-8 bytes per token of the estimate. BPE tokenizers average about 4 bytes of English prose per token
and 3 of JSON or code; 3 overestimates prose on purpose (a request estimated too large loses an old turn,
one estimated too small is refused by the provider). Non-Latin scripts take 2-3 bytes per character and
about one token per character, which 3 bytes per token meets."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Role markers and separators every message costs on top of its text (OpenAI's chat format: 3-4)."""

SCALE_LIMITS = (0.5, 2.0)
"""The provider's usage may correct the estimate by at most this much either way: a proxy that reports
no or absurd usage must not make the budget useless."""


@dataclass(frozen=True)
class ModelWindow:
    """A model family's context window; ``max_input`` when the provider caps the input below it."""

    prefix: str
    window: int
    max_input: int | None = None


KNOWN_WINDOWS: tuple[ModelWindow, ...] = (
    # OpenAI
    ModelWindow("gpt3.5turbo", 16_385),
    ModelWindow("gpt4", 8_192),
    ModelWindow("gpt4turbo", 128_000),
    ModelWindow("gpt4o", 128_000),
    ModelWindow("gpt4.1", 1_047_576),
    ModelWindow("gpt5", 400_000, max_input=272_000),
    ModelWindow("o1", 200_000),
    ModelWindow("o3", 200_000),
    ModelWindow("o4", 200_000),
    ModelWindow("gptoss", 131_072),
    # Gemini
    ModelWindow("gemini1.5flash", 1_048_576),
    ModelWindow("gemini1.5pro", 2_097_152),
    ModelWindow("gemini2", 1_048_576),
    ModelWindow("gemini3", 1_048_576),
    # Local models as Ollama and vLLM name them (Ollama's own default num_ctx may be smaller: see README)
    ModelWindow("llama3", 8_192),
    ModelWindow("llama3.1", 131_072),
    ModelWindow("llama3.2", 131_072),
    ModelWindow("llama3.3", 131_072),
    ModelWindow("qwen2.5", 32_768),
    ModelWindow("qwen3", 40_960),
    ModelWindow("mistral", 32_768),
    ModelWindow("gemma2", 8_192),
    ModelWindow("gemma3", 131_072),
    ModelWindow("phi3", 4_096),
    ModelWindow("phi4", 16_384),
    ModelWindow("deepseek", 65_536),
    ModelWindow("deepseekr1", 131_072),
)

_BY_LENGTH = sorted(KNOWN_WINDOWS, key=lambda entry: len(entry.prefix), reverse=True)
_NOISE = re.compile(r"[^a-z0-9.]")


def normalize_model_name(model: str) -> str:
    """``meta-llama/Llama-3.1-8B-Instruct`` → ``llama3.18binstruct``; ``gpt-4o-mini`` → ``gpt4omini``: the
    organisation prefix of a Hugging Face or ``models/`` name goes, so do dashes, colons and case."""
    return _NOISE.sub("", model.rsplit("/", 1)[-1].lower())


def known_window(model: str) -> ModelWindow | None:
    """The table entry of ``model``'s family (the longest matching prefix), or ``None``."""
    name = normalize_model_name(model)
    return next((entry for entry in _BY_LENGTH if name.startswith(entry.prefix)), None)


@dataclass(frozen=True)
class ContextBudget:
    """The model's window and how much of it the request (system prompt, tools, history) may fill."""

    window_tokens: int
    input_tokens: int
    source: str
    """Where the window came from: ``LLM_CONTEXT_TOKENS``, ``known model``, or ``default``."""

    @property
    def reserved_tokens(self) -> int:
        """Kept for the answer."""
        return self.window_tokens - self.input_tokens


def context_budget(
    model: str, context_tokens: int | None = None, max_output_tokens: int | None = None
) -> ContextBudget:
    """The budget for ``model`` given the settings ``LLM_CONTEXT_TOKENS`` / ``LLM_MAX_OUTPUT_TOKENS``
    (``None`` when unset; validated positive by the configuration). The input keeps at least a quarter of
    the window, whatever the output setting asks."""
    entry = known_window(model)
    if context_tokens is not None:
        window, max_input, source = context_tokens, None, "LLM_CONTEXT_TOKENS"
    elif entry is not None:
        window, max_input, source = entry.window, entry.max_input, "known model"
    else:
        window, max_input, source = DEFAULT_WINDOW_TOKENS, None, "default"
    reserve = (
        max_output_tokens if max_output_tokens is not None else min(int(window * OUTPUT_SHARE), MAX_OUTPUT_RESERVE)
    )
    room = max(window - reserve, window // 4, 1)
    return ContextBudget(window, min(room, max_input) if max_input is not None else room, source)


# --- estimates ----------------------------------------------------------------------------------------


def text_tokens(text: str) -> float:
    """Estimated tokens of ``text`` (fractional: sums are rounded once, at the end)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return size / BYTES_PER_TOKEN


def json_tokens(value: object) -> float:
    """Estimated tokens of ``value`` as the JSON text the providers receive."""
    return len(to_json(value, fallback=str)) / BYTES_PER_TOKEN


def message_tokens(message: ChatMessage) -> float:
    """Estimated tokens of one message as sent: text, calls (name and arguments), result or error.

    ``provider_metadata`` is not counted: a replayed Gemini turn holds the same text and calls (its thought
    signatures are opaque bytes the model does not read as input).
    """
    tokens = (
        MESSAGE_OVERHEAD_TOKENS + text_tokens(message.content) if message.role != "tool" else MESSAGE_OVERHEAD_TOKENS
    )
    for call in message.tool_calls or ():
        tokens += MESSAGE_OVERHEAD_TOKENS + text_tokens(call.name) + json_tokens(call.args)
    result = message.tool_result
    if result is not None:
        tokens += text_tokens(result.name) + (
            text_tokens(result.error) if result.error is not None else json_tokens(result.result)
        )
    return tokens


def fixed_tokens(system_prompt: str, tool_schemas: Sequence[ToolSchema]) -> float:
    """Estimated tokens of what every request carries besides the history."""
    tools = json_tokens([schema.to_wire() for schema in tool_schemas]) if tool_schemas else 0.0
    return MESSAGE_OVERHEAD_TOKENS + text_tokens(system_prompt) + tools


def usage_scale(messages: Sequence[ChatMessage]) -> float:
    """How far off the estimate was, as the provider counted the latest request whose answer is in the
    history: its reported input tokens over the uncorrected estimate stored beside them. 1.0 when no
    answer carries both (a new conversation, a provider that reports no usage, a caller of the route that
    does not send them back); the latest correction carries on when the latest answer has no usage."""
    for message in reversed(messages):
        report = message.context
        if message.role != "assistant" or report is None:
            continue
        uncorrected = report.estimated_tokens / report.scale
        if message.usage is None or message.usage.input_tokens <= 0 or uncorrected <= 0:
            return clamp_scale(report.scale)
        return clamp_scale(message.usage.input_tokens / uncorrected)
    return 1.0


def clamp_scale(scale: float) -> float:
    """``scale`` within :data:`SCALE_LIMITS`."""
    low, high = SCALE_LIMITS
    return min(high, max(low, scale))
