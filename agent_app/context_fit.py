"""What of a conversation is sent when all of it does not fit the model's context window.

Why here and not in the page: the route's callers send whole histories too, so the one chat handler fits
every request the same way. Storage is never touched: only the request shrinks. In this order, until the
estimate (:mod:`agent_app.context_budget`) fits the budget:

1. Tool results older than the latest user message become a short stub that says what they were and how to
   get them back (a transcript page: its asset, time range and word count, and the call that reads it again).
2. The oldest whole turns are left out. A turn starts at a user message, so a tool call is never separated
   from its result, the latest user message and every system message are always sent, and a Gemini turn
   keeps its thought signatures (they ride in ``provider_metadata``, which no step here changes).
3. Results of the running turn's earlier tool rounds become stubs too.
4. The latest round's results (the model has not seen them yet) become a stub saying they were too large
   to send, so the model asks for less instead of the conversation failing on every retry.
5. Whole tool rounds of the running turn (the model's tool-call message and its results), largest first, are
   left out: a model that asked for a thousand calls, or sent megabytes of arguments, made a round no stub
   can shrink, and resending it would fail this run and every Retry. The model answers the question anew.
6. What still does not fit (the latest user message, the instructions) is refused with
   :class:`ContextTooLargeError` naming the part that is too large.

A provider that still refuses the request as too long gets one retry fitted with the numbers its refusal
names (:meth:`ContextWindow.refit`); later requests of the conversation keep that smaller budget.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from agent_app.clock import clock_text
from agent_app.context_budget import ContextBudget, clamp_scale, fixed_tokens, message_tokens, usage_scale
from agent_app.types import AgentContext, ChatMessage, ContextReport, ToolCall, ToolResult, ToolSchema

logger = logging.getLogger(__name__)

STUB_PREFIX = "[Left out to save room in the model's context:"
TOO_LARGE_PREFIX = "[Too large for the model's context window, so not sent; ask for less at once. It was:"

RETRY_SHRINK = 0.8
"""After a provider's own context-length refusal the retry aims at this share of what was refused."""


class ContextTooLargeError(ValueError):
    """Even the least a request must carry does not fit the budget; the message says what is too large."""


@dataclass(frozen=True)
class FittedHistory:
    """The messages to send and how they were fitted."""

    messages: list[ChatMessage]
    report: ContextReport


@dataclass
class _Plan:
    """The fitting state over one history: estimates per message, what is stubbed and from where it is sent."""

    messages: Sequence[ChatMessage]
    tokens: list[float]
    total: float
    limit: float
    start: int = 0
    stubbed: dict[int, ChatMessage] = field(default_factory=dict)
    left_out: set[int] = field(default_factory=set)
    """Messages of the running turn's tool rounds that are not sent (step 5)."""

    def fits(self) -> bool:
        return self.total <= self.limit


@dataclass(frozen=True)
class ContextWindow:
    """What every request of a run must fit its history into: the model's budget, and the system prompt and
    tools sent beside the history (their estimate worked out once, with the window)."""

    budget: ContextBudget
    system_prompt: str = ""
    tool_schemas: Sequence[ToolSchema] = ()
    context: AgentContext | None = None
    fixed_tokens: float = field(init=False)
    """Estimated tokens of the system prompt and tools."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "fixed_tokens", fixed_tokens(self.system_prompt, self.tool_schemas))

    def fit(self, messages: Sequence[ChatMessage]) -> FittedHistory:
        """The history to send, within the budget an earlier refusal taught (:func:`learned_budget`)."""
        return fit_history(self._learned(messages), messages)

    def refit(self, messages: Sequence[ChatMessage], refused: FittedHistory, refusal: str) -> FittedHistory:
        """The history for the one retry after the provider refused ``refused`` as too long: the estimate
        can be off, and without a retry every Retry of the conversation would send the same history."""
        smaller, scale = retry_budget(learned_budget(self.budget, messages), refused.report, refusal)
        logger.info(
            "The provider found the request too long (estimated %d of %d tokens); retrying within %d, scale %.2f",
            refused.report.estimated_tokens,
            refused.report.budget_tokens,
            smaller.input_tokens,
            scale,
        )
        return fit_history(replace(self, budget=smaller), messages, scale)

    def _learned(self, messages: Sequence[ChatMessage]) -> ContextWindow:
        learned = learned_budget(self.budget, messages)
        return self if learned is self.budget else replace(self, budget=learned)


def fit_history(window: ContextWindow, messages: Sequence[ChatMessage], scale: float | None = None) -> FittedHistory:
    """``messages`` shrunk until their estimate, times ``scale`` (default: learnt from the history's usage),
    fits ``window``'s budget together with its system prompt and tools. Raises :class:`ContextTooLargeError`
    when even the latest turn's must-sends do not fit."""
    budget = window.budget
    factor = usage_scale(messages) if scale is None else scale
    tokens = [message_tokens(message) for message in messages]
    fixed = window.fixed_tokens
    plan = _Plan(messages, tokens, fixed + sum(tokens), budget.input_tokens / factor)
    if not plan.fits():
        _shrink(plan, fixed, factor, window)
    start, stubbed = plan.start, plan.stubbed
    sent = list(messages)  # the usual case: all of it fits as it is
    if start or stubbed or plan.left_out:
        sent = [stubbed.get(index, message) for index, message in enumerate(messages) if _is_sent(plan, index)]
    left_out = sum(1 for message in messages[:start] if message.role != "system")
    first = next((message.id for message in messages[start:] if message.role != "system"), None) if left_out else None
    report = ContextReport(
        window_tokens=budget.window_tokens,
        budget_tokens=budget.input_tokens,
        estimated_tokens=round(plan.total * factor),
        scale=factor,
        left_out_messages=left_out,
        first_sent_id=first,
        stubbed_results=sum(1 for index in stubbed if index >= start),
    )
    return FittedHistory(sent, report)


def _shrink(plan: _Plan, fixed: float, factor: float, window: ContextWindow) -> None:
    """Stubs and left-out turns, in the module's order, until ``plan`` fits; else :class:`ContextTooLargeError`."""
    messages, context = plan.messages, window.context
    latest_user = _latest_user(messages)
    calls = _calls_by_id(messages)
    _stub_results(plan, range(latest_user), calls, context)
    _drop_oldest_turns(plan, latest_user)
    last_round = _last_round_start(messages)
    _stub_results(plan, range(latest_user + 1, last_round), calls, context)
    _stub_results(plan, range(max(last_round, latest_user + 1), len(messages)), calls, context, TOO_LARGE_PREFIX)
    _leave_out_rounds(plan, latest_user)
    if not plan.fits():
        raise ContextTooLargeError(_too_large(plan, fixed, factor, window.budget, latest_user))


def retry_budget(budget: ContextBudget, report: ContextReport, refusal: str) -> tuple[ContextBudget, float]:
    """The budget and scale for the one retry after the provider refused ``report``'s request as too long.

    The refusal usually says how many tokens the provider counted and what its window is (OpenAI, vLLM and
    Gemini all do): the count gives the true tokens-per-estimate ratio, the window the true limit (a server
    started with a smaller window than configured). Without numbers the estimate is taken as
    :data:`RETRY_SHRINK` too low. Either way the retry aims :data:`RETRY_SHRINK` below the limit.
    """
    counted, maximum = _refusal_numbers(refusal)
    uncorrected = report.estimated_tokens / report.scale
    scale = clamp_scale(counted / uncorrected if counted and uncorrected > 0 else report.scale / RETRY_SHRINK)
    limit = float(budget.input_tokens)
    if maximum:  # the provider's window, with the same share kept for the answer
        limit = min(limit, maximum * budget.input_tokens / budget.window_tokens)
    elif counted:
        limit = min(limit, counted)
    room = max(1, int(limit * RETRY_SHRINK))
    return ContextBudget(budget.window_tokens, room, "the provider's refusal"), scale


def learned_budget(budget: ContextBudget, messages: Sequence[ChatMessage]) -> ContextBudget:
    """``budget``, or the smaller one an earlier retry of this conversation learnt from the provider (same
    configured window), so that not every later request is refused once first."""
    for message in reversed(messages):
        report = message.context
        if message.role == "assistant" and report is not None:
            if report.window_tokens == budget.window_tokens and report.budget_tokens < budget.input_tokens:
                return ContextBudget(budget.window_tokens, report.budget_tokens, "learnt from the provider")
            return budget
    return budget


_COUNTED = (
    re.compile(r"messages resulted in (\d+) tokens"),  # OpenAI
    re.compile(r"you requested (\d+) tokens"),  # vLLM and older OpenAI
    re.compile(r"input token count \((\d+)\)"),  # Gemini
)
_MAXIMUM = (
    re.compile(r"maximum context length is (\d+) tokens"),  # OpenAI, vLLM
    re.compile(r"maximum number of tokens allowed \((\d+)\)"),  # Gemini
)


def _refusal_numbers(refusal: str) -> tuple[int | None, int | None]:
    """``(tokens the provider counted, its window)`` as far as its message says."""
    found = [
        next((int(m.group(1)) for p in patterns if (m := p.search(refusal))), None) for patterns in (_COUNTED, _MAXIMUM)
    ]
    return found[0], found[1]


# --- the steps ------------------------------------------------------------------------------------------


def _latest_user(messages: Sequence[ChatMessage]) -> int:
    """Index of the latest user message (0 when there is none: then everything is the current turn)."""
    return next((index for index in range(len(messages) - 1, -1, -1) if messages[index].role == "user"), 0)


def _last_round_start(messages: Sequence[ChatMessage]) -> int:
    """Index of the first of the trailing tool results (the round the model has not answered yet)."""
    index = len(messages)
    while index > 0 and messages[index - 1].role == "tool":
        index -= 1
    return index


def _is_sent(plan: _Plan, index: int) -> bool:
    if index in plan.left_out:
        return False
    return index >= plan.start or plan.messages[index].role == "system"


def _tool_rounds(messages: Sequence[ChatMessage], after: int) -> list[range]:
    """The tool rounds after index ``after``: each a model message with calls and the results that follow it."""
    rounds: list[range] = []
    index = after + 1
    while index < len(messages):
        end = index + 1
        if messages[index].role == "assistant" and messages[index].tool_calls:
            while end < len(messages) and messages[end].role == "tool":
                end += 1
            rounds.append(range(index, end))
        index = end
    return rounds


def _calls_by_id(messages: Sequence[ChatMessage]) -> dict[str, ToolCall]:
    return {call.id: call for message in messages if message.tool_calls for call in message.tool_calls}


def _stub_results(
    plan: _Plan, indexes: range, calls: dict[str, ToolCall], context: AgentContext | None, prefix: str = STUB_PREFIX
) -> None:
    for index in indexes:
        if plan.fits():
            return
        message = plan.messages[index]
        if message.tool_result is None or index < plan.start or index in plan.stubbed:
            continue
        stub = _stubbed(message, calls.get(message.tool_result.tool_call_id), context, prefix)
        saved = plan.tokens[index] - message_tokens(stub)
        if saved > 0:
            plan.stubbed[index] = stub
            plan.tokens[index] -= saved
            plan.total -= saved


def _drop_oldest_turns(plan: _Plan, latest_user: int) -> None:
    """Move the start past whole turns (each up to the next user message), oldest first, never past the
    latest user message; system messages stay sent wherever they are."""
    while not plan.fits() and plan.start < latest_user:
        end = plan.start + 1
        while end < latest_user and plan.messages[end].role != "user":
            end += 1
        plan.total -= sum(plan.tokens[i] for i in range(plan.start, end) if plan.messages[i].role != "system")
        plan.start = end


def _leave_out_rounds(plan: _Plan, latest_user: int) -> None:
    """Step 5: the running turn's tool rounds, largest first, left out until the plan fits."""
    rounds = _tool_rounds(plan.messages, latest_user) if not plan.fits() else []
    for round_ in sorted(rounds, key=lambda indexes: -sum(plan.tokens[i] for i in indexes)):
        if plan.fits():
            return
        plan.left_out.update(round_)
        plan.total -= sum(plan.tokens[i] for i in round_)


def _too_large(plan: _Plan, fixed: float, scale: float, budget: ContextBudget, latest_user: int) -> str:
    room = (
        f"the model's context window ({budget.window_tokens:,} tokens, "
        f"{budget.reserved_tokens:,} of them kept for the answer)"
    )
    if fixed * scale > budget.input_tokens:
        return (
            f"The instructions and tool descriptions alone need about {round(fixed * scale):,} tokens, more than "
            f"{room} leaves; set LLM_CONTEXT_TOKENS if the model's window is larger"
        )
    sent = [index for index in range(len(plan.messages)) if _is_sent(plan, index) and index >= latest_user]
    largest = max(sent, key=lambda index: plan.tokens[index], default=latest_user)
    message = plan.messages[largest]
    size = f"about {round(plan.tokens[largest] * scale):,} tokens"
    if message.tool_result is not None:
        return (
            f"The result of {message.tool_result.name} is too large for {room}: {size}. "
            "Ask for a smaller part (a shorter time range)"
        )
    return f"This message is too long for {room}: {size}. Shorten it or send it in parts"


# --- stubs ----------------------------------------------------------------------------------------------


def _stubbed(message: ChatMessage, call: ToolCall | None, context: AgentContext | None, prefix: str) -> ChatMessage:
    result = message.tool_result
    if result is None:  # nothing to shorten
        return message
    text = f"{prefix} {_describe_result(result, call, context, _transcript(message))}]"
    stubbed = result.model_copy(update={"result": text, "error": None})
    return message.model_copy(update={"tool_result": stubbed})


def _describe_result(
    result: ToolResult, call: ToolCall | None, context: AgentContext | None, transcript: Transcript | None
) -> str:
    """What a left-out result was and the call that gets it back: a transcript (``transcript``, of ``result``)
    says its asset, range and words; anything else its size and the call's arguments."""
    if result.error is not None:
        return f"{result.name} failed: {result.error[:200]}"
    if transcript is not None:
        return _describe_transcript(result.name, transcript, context)
    args = call.args if call is not None else {}
    size = f"{len(str(result.result)):,} characters"
    return f"a result of {result.name} ({size}); call {result.name} again with {_arguments(args)} to get it back"


Transcript: TypeAlias = tuple[str, int, int, int, bool]
"""A transcript result's asset id, first and last ms, word count, and whether it carried word times."""


def _transcript(message: ChatMessage) -> Transcript | None:
    data = message.tool_result.result if message.tool_result is not None else None
    if not (isinstance(data, dict) and isinstance(data.get("segments"), list) and data.get("assetId")):
        return None
    segments = [segment for segment in data["segments"] if isinstance(segment, dict)]
    start = _ms(segments[0].get("startMs")) if segments else _ms(data.get("startMs"))
    end = _ms(segments[-1].get("endMs")) if segments else _ms(data.get("endMs"))
    words = sum(len(str(segment.get("text", "")).split()) for segment in segments)
    timed = any(isinstance(segment.get("words"), list) for segment in segments)
    return str(data["assetId"]), start, end, words, timed


def _describe_transcript(tool: str, transcript: Transcript, context: AgentContext | None) -> str:
    asset_id, start, end, words, timed = transcript
    names = {asset.id: asset.name for asset in context.media_assets} if context is not None else {}
    span = f"{clock_text(start)}–{clock_text(end)}"
    arguments: dict[str, Any] = {"assetId": asset_id, "startMs": start, "endMs": end}
    if timed:  # the call that gets it back asks for the word times again
        arguments["words"] = True
    return (
        f"transcript of {names.get(asset_id, asset_id)} {span}, {words:,} words; "
        f"call {tool} again with {_arguments(arguments)} to read it"
    )


def _ms(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _arguments(args: dict[str, Any]) -> str:
    return (
        ", ".join(f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}" for key, value in args.items())
        or "the same arguments"
    )
