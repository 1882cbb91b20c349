"""A Gemini ``streamGenerateContent`` stream, put back together into the answer it stands for.

Why: the adapter always streams but reads (and stores, for replay) one whole model turn; assembling the
streamed responses into the parts ``generateContent`` would return keeps the stored turn the same whichever
way it arrived.

* Text arrives in pieces: consecutive plain text parts of the same kind (answer or thought) are joined into
  one part. A thought signature stays on the part it belongs to: a piece carrying one ends its part (the
  next text starts a new part, as in a whole response), and a signature Gemini sends on an empty text part
  of its own goes onto the text part just before it (or stays a part of its own when there is none).
* Every other part (function calls with their ids, arguments and signatures, anything new) is kept whole,
  exactly as sent, in order.
* The candidate's other fields (finish reason and message, safety ratings...) are the last chunk's; the
  prompt feedback is the first one sent; usage is the last one sent (Gemini's counts are running totals).
"""

from __future__ import annotations

from google.genai import types as gt

from agent_app.providers.provider_text import valid_text
from agent_app.types import TokenUsage

_TEXT_FIELDS = frozenset({"text", "thought", "thought_signature"})


def _is_plain_text(part: gt.Part) -> bool:
    return part.text is not None and part.model_fields_set <= _TEXT_FIELDS


def _answer_text(part: gt.Part) -> str:
    return part.text or "" if part.text is not None and not part.thought and part.function_call is None else ""


class ResponseAssembler:
    """Feed it every response of one stream with :meth:`add`; then read the whole answer from it."""

    def __init__(self) -> None:
        self._parts: list[gt.Part] = []
        self._candidate: gt.Candidate | None = None
        self._feedback: gt.GenerateContentResponsePromptFeedback | None = None
        self._usage: gt.GenerateContentResponseUsageMetadata | None = None
        self._text: list[str] = []

    def add(self, response: gt.GenerateContentResponse) -> str:
        """Take one streamed response; returns its answer text (thoughts are not the answer)."""
        self._feedback = self._feedback or response.prompt_feedback
        self._usage = response.usage_metadata or self._usage
        if not response.candidates:
            return ""
        candidate = response.candidates[0]
        self._candidate = candidate
        content = candidate.content
        if content is None:
            return ""
        texts = []
        for part in content.parts or []:
            self._merge(part)
            texts.append(_answer_text(part))
        text = valid_text("".join(texts))
        if text:
            self._text.append(text)
        return text

    def _merge(self, part: gt.Part) -> None:
        last = self._parts[-1] if self._parts else None
        if last is not None and _is_plain_text(last) and _is_plain_text(part) and last.thought_signature is None:
            if part.text == "" and part.thought_signature is not None:  # a signature on an empty part of its own
                self._parts[-1] = last.model_copy(update={"thought_signature": part.thought_signature})
                return
            if bool(last.thought) == bool(part.thought):
                update: dict[str, object] = {"text": (last.text or "") + (part.text or "")}
                if part.thought_signature is not None:
                    update["thought_signature"] = part.thought_signature
                self._parts[-1] = last.model_copy(update=update)
                return
        self._parts.append(part.model_copy())

    @property
    def text(self) -> str:
        """The answer's text so far."""
        return "".join(self._text)

    @property
    def usage(self) -> TokenUsage | None:
        """The request's token counts, when Gemini sent them."""
        return _token_usage(self._usage)

    @property
    def candidate(self) -> gt.Candidate | None:
        """The last chunk's candidate: its finish reason and message are the answer's (None: no candidate)."""
        return self._candidate

    @property
    def parts(self) -> list[gt.Part]:
        """The answer's parts, as a whole response would hold them."""
        return self._parts

    @property
    def prompt_feedback(self) -> gt.GenerateContentResponsePromptFeedback | None:
        """The first prompt feedback sent (why a prompt was blocked)."""
        return self._feedback


def _token_usage(usage: gt.GenerateContentResponseUsageMetadata | None) -> TokenUsage | None:
    """Tokens in (the prompt, tool-use prompt included) and out (the answer, thinking included), or ``None``
    when Gemini sent no count."""
    if usage is None or usage.prompt_token_count is None:
        return None
    prompt = usage.prompt_token_count + (usage.tool_use_prompt_token_count or 0)
    output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return TokenUsage(input_tokens=max(0, prompt), output_tokens=max(0, output))
