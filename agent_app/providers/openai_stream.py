"""An OpenAI-compatible chat-completion stream, put back together into the message it stands for.

Why: the adapter always streams (text reaches the reader as it arrives) but reads the answer in one place;
assembling the chunks into the message a non-streamed request returns (same attributes: ``content``,
``refusal``, ``tool_calls[].id/.function.name/.arguments``, ``function_call``) keeps one reading of answers
for both kinds of server. Plain dataclasses rather than the SDK's models: its lenient ``construct`` cost
more than all the rest of the assembly. The assembly is by hand rather than the SDK's
``ChatCompletionStreamState``, which rebuilds the whole message on every chunk and concatenates whatever a
server repeats: local servers differ, and this absorbs it.

* Text and refusal deltas are concatenated; reasoning extras (``reasoning_content``...) are not the answer.
* Tool calls are assembled by ``index``: the first ``id`` and ``name`` seen are kept (a server repeating
  them in every delta does no harm; a name sent in fragments is joined), ``arguments`` fragments are joined.
  A delta without an index (some servers) belongs to the call with the same id, or else to the last one.
* The deprecated ``function_call`` deltas become that protocol's single call.
* ``finish_reason`` is the last one sent; usage is the last one sent, on a chunk of its own
  (``stream_options.include_usage``) or on any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk

from agent_app.providers.provider_text import valid_text
from agent_app.types import TokenUsage


@dataclass(frozen=True)
class AssembledFunction:
    name: str
    arguments: str


@dataclass(frozen=True)
class AssembledCall:
    id: str | None
    function: AssembledFunction


@dataclass(frozen=True)
class AssembledMessage:
    """The streamed message, read like the SDK's ``ChatCompletionMessage``."""

    content: str | None
    refusal: str | None
    tool_calls: list[AssembledCall]
    function_call: AssembledFunction | None


@dataclass
class _CallSlot:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, call_id: object, name: object, arguments: object) -> None:
        if isinstance(call_id, str) and call_id and not self.id:
            self.id = call_id
        if isinstance(name, str) and name and name != self.name:
            self.name += name
        if isinstance(arguments, str):
            self.arguments.append(arguments)

    def function(self) -> AssembledFunction:
        return AssembledFunction(self.name, "".join(self.arguments))


def text_of(content: object) -> str:
    """The answer's text. Usually a string; some servers (Mistral's reasoning models, proxies) send a list of
    typed parts, of which only ``text`` parts are the answer (``thinking`` and the like are not)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


class CompletionAssembler:
    """Feed it every chunk of one stream with :meth:`add`; :meth:`completion` is the whole answer."""

    def __init__(self) -> None:
        self.seen_choice = False
        """Whether any chunk had a choice (a stream without one has no answer)."""
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _CallSlot] = {}
        self._legacy: _CallSlot | None = None
        self.finish_reason: str | None = None
        self._usage: CompletionUsage | None = None
        self.whole: object | None = None
        """The completion of a server that answered the stream request whole (no chunks then)."""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; returns its answer text (empty when it has none)."""
        if chunk.usage is not None:
            self._usage = chunk.usage
        choice = next((c for c in chunk.choices or [] if not c.index), None)  # the first choice only
        if choice is None:
            return ""
        self.seen_choice = True
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return ""
        for call in delta.tool_calls or []:
            function = call.function
            self._slot(call.index, call.id).add(
                call.id, getattr(function, "name", None), getattr(function, "arguments", None)
            )
        if delta.function_call is not None:
            self._legacy = self._legacy or _CallSlot()
            self._legacy.add(None, delta.function_call.name, delta.function_call.arguments)
        if delta.refusal:
            self._refusal.append(valid_text(delta.refusal))
        text = valid_text(text_of(delta.content))
        if text:
            self._text.append(text)
        return text

    def _slot(self, index: object, call_id: str | None) -> _CallSlot:
        if not isinstance(index, int):
            same = next((i for i, slot in self._calls.items() if call_id and slot.id == call_id), None)
            if same is not None:
                index = same
            elif self._calls and not call_id:
                index = max(self._calls)
            else:
                index = max(self._calls, default=-1) + 1
        return self._calls.setdefault(index, _CallSlot())

    @property
    def text(self) -> str:
        """The answer's text so far."""
        return "".join(self._text)

    @property
    def usage(self) -> CompletionUsage | None:
        """The SDK's usage of the request, when the server sent it."""
        return self._usage

    def message(self) -> AssembledMessage:
        """The whole message, as a non-streamed request would have returned it."""
        return AssembledMessage(
            content=self.text or None,
            refusal="".join(self._refusal) or None,
            tool_calls=[AssembledCall(self._calls[i].id, self._calls[i].function()) for i in sorted(self._calls)],
            function_call=self._legacy.function() if self._legacy else None,
        )


def token_usage(usage: CompletionUsage | None) -> TokenUsage | None:
    """Our :class:`~agent_app.types.TokenUsage` of the SDK's usage (``None`` when the server sent none)."""
    if usage is None or not isinstance(usage.prompt_tokens, int):
        return None
    output = usage.completion_tokens if isinstance(usage.completion_tokens, int) else 0
    return TokenUsage(input_tokens=max(0, usage.prompt_tokens), output_tokens=max(0, output))
