"""The ``gemini`` adapter, on the official ``google-genai`` SDK (``streamGenerateContent``, async client).

What Gemini needs that OpenAI does not, and why it is done this way (the request itself is built by
:mod:`agent_app.providers.gemini_request`):

* The system prompt goes to ``system_instruction``: Gemini has no system role in ``contents``.
* Tools are ``FunctionDeclaration``s, never Python callables; automatic function calling is disabled.
* Gemini's function calls may come without ids: the adapter synthesizes one and remembers, in the
  turn's ``provider_metadata``, which ids are Gemini's, so a ``function_response`` carries Gemini's id
  only when Gemini gave one (and always the exact function name).
* The model turn is replayed exactly as Gemini returned it, thought signatures included, from
  ``provider_metadata`` (Gemini 3 rejects a replayed function call without its signature).
* All results of one model turn go back in one ``Content``.
* ``MALFORMED_FUNCTION_CALL`` (Gemini wrote a call it could not parse, an occasional glitch of 2.x models)
  is asked again once when ``LLM_MAX_RETRIES`` allows retries and no text of it was shown yet; a second one
  is a failure.
* Empty candidates and finish reasons such as ``UNEXPECTED_TOOL_CALL`` are failures, not empty answers;
  so are blocked answers (``SAFETY``, ``RECITATION``...), even with some text before the block. Text stopped
  by ``MAX_TOKENS`` is returned with :data:`~agent_app.providers.base.CUT_OFF_NOTE`.
* Every request streams; the streamed responses are put back together into the one ``generateContent``
  would return (:mod:`agent_app.providers.gemini_stream`), so function calls and thought signatures are
  stored and replayed exactly as for a whole answer. A stream that breaks (connection cut, unreadable
  event, error event) is a :class:`ProviderError` carrying the text that had arrived.

``LLM_BASE_URL`` is ignored (the spec); the SDK's own ``GOOGLE_GEMINI_BASE_URL`` still applies, which is
how tests reach the fake server. google-genai has no timeout and no retries unless given: both come from
the configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt

from agent_app.providers.base import CUT_OFF_NOTE, ProviderError
from agent_app.providers.gemini_request import METADATA_KEY, messages_to_gemini, model_turn, request_config
from agent_app.providers.gemini_stream import ResponseAssembler
from agent_app.providers.provider_loop import PacedTextSink
from agent_app.providers.provider_text import valid_data, valid_text
from agent_app.providers.sdk_adapter import SDKAdapter
from agent_app.types import (
    ChatMessage,
    ChatResponse,
    ToolCall,
    ToolSchema,
    history_call_ids,
    synthesize_call_id,
)
from agent_app.validation import MAX_JSON_DEPTH, json_depth_exceeds

logger = logging.getLogger(__name__)

_FAILED_FINISH_REASONS = frozenset(
    {
        gt.FinishReason.MALFORMED_FUNCTION_CALL,
        gt.FinishReason.UNEXPECTED_TOOL_CALL,
        gt.FinishReason.TOO_MANY_TOOL_CALLS,
        gt.FinishReason.MISSING_THOUGHT_SIGNATURE,
        gt.FinishReason.MALFORMED_RESPONSE,
        # Blocked output: whatever text came before the block is not an answer the user should get as one.
        gt.FinishReason.SAFETY,
        gt.FinishReason.RECITATION,
        gt.FinishReason.BLOCKLIST,
        gt.FinishReason.PROHIBITED_CONTENT,
        gt.FinishReason.SPII,
        gt.FinishReason.MODEL_ARMOR,
    }
)

_RESAMPLE_FINISH_REASONS = frozenset({gt.FinishReason.MALFORMED_FUNCTION_CALL, gt.FinishReason.MALFORMED_RESPONSE})
"""The model botched its own output (a call in Python syntax, broken JSON): sampling again usually works."""


class MalformedTurnError(ProviderError):
    """Gemini's turn was malformed (:data:`_RESAMPLE_FINISH_REASONS`): worth one more request."""


_RETRY_STATUS_CODES = [408, 429, 500, 502, 503, 504]


def response_to_chat(answer: ResponseAssembler, taken: set[str] | None = None) -> ChatResponse:
    """The streamed answer as our response; no candidate, a failed finish reason or an empty turn raise
    :class:`ProviderError`. Gemini's call id is ours too unless it is missing, repeated or in ``taken``
    (the history's ids); the turn's metadata keeps Gemini's id either way."""
    candidate = answer.candidate
    if candidate is None:
        feedback = answer.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        raise ProviderError(f"Gemini returned no candidates (block_reason={reason})")
    if candidate.finish_reason in _RESAMPLE_FINISH_REASONS:
        raise MalformedTurnError(f"Gemini finished with {candidate.finish_reason}: {candidate.finish_message or ''}")
    if candidate.finish_reason in _FAILED_FINISH_REASONS:
        raise ProviderError(f"Gemini finished with {candidate.finish_reason}: {candidate.finish_message or ''}")
    parts = answer.parts
    texts = [valid_text(part.text) for part in parts if part.text and not part.thought]
    calls: list[ToolCall] = []
    call_ids: dict[str, str | None] = {}
    for part in parts:
        function_call = part.function_call
        if function_call is None or not function_call.name:
            continue
        gemini_id = function_call.id or None
        reused = gemini_id in call_ids or (taken is not None and gemini_id in taken)
        call_id = gemini_id if gemini_id and not reused else synthesize_call_id()
        call_ids[call_id] = gemini_id
        args = valid_data(dict(function_call.args or {}))
        if json_depth_exceeds(args):  # stored in the history, it would break every later request
            raise ProviderError(f"Gemini's call of {function_call.name} nests deeper than {MAX_JSON_DEPTH} levels")
        calls.append(ToolCall(id=call_id, name=valid_text(function_call.name), args=args))
    if not calls and not texts:
        raise ProviderError(f"Gemini returned an empty answer (finish_reason={candidate.finish_reason})")
    # Replayed as the model's turn, whatever role the response had: a response without one (proxies drop it)
    # would be sent back role-less, and Gemini refuses a multi-turn request with a content that has no valid role.
    stored = {"content": model_turn(parts), "callIds": call_ids}
    text = "".join(texts)
    if candidate.finish_reason == gt.FinishReason.MAX_TOKENS and text.strip():
        text += CUT_OFF_NOTE
    return ChatResponse(
        content=text, tool_calls=calls or None, provider_metadata={METADATA_KEY: stored}, usage=answer.usage
    )


class GeminiAdapter(SDKAdapter[genai.Client]):
    """A ``genai.Client`` per configuration and event loop; google-genai does the retries (429, 5xx, before the
    stream starts) with ``LLM_MAX_RETRIES``, and :meth:`stream` asks once more after a malformed turn."""

    name = "gemini"

    def new_client(self) -> genai.Client:
        config = self.config
        backoff = config.retry_backoff_seconds
        return genai.Client(
            api_key=config.api_key,
            http_options=gt.HttpOptions(
                base_url=config.gemini_base_url,
                timeout=max(1, round(config.timeout_seconds * 1000)),
                retry_options=gt.HttpRetryOptions(
                    attempts=config.max_retries + 1,
                    initial_delay=backoff,
                    max_delay=max(backoff * 16, backoff),
                    jitter=backoff,
                    http_status_codes=_RETRY_STATUS_CODES,
                ),
                # httpx's default pool of 100 connections would queue the 101st concurrent answer; OpenAI's
                # SDK allows 1000, and so do we (the route's own limit, AGENT_MAX_CONCURRENT_CHATS, is lower).
                async_client_args={"limits": httpx2.Limits(max_connections=1000, max_keepalive_connections=100)},
            ),
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        system_prompt: str,
        tool_schemas: Sequence[ToolSchema],
        on_text: PacedTextSink,
    ) -> ChatResponse:
        contents, system_texts = messages_to_gemini(messages)
        if not contents:
            raise ProviderError("nothing to send: every message of the conversation is empty")
        instruction = "\n\n".join(text for text in [system_prompt, *system_texts] if text)
        config = request_config(instruction, tool_schemas)
        model = self.config.model
        taken = history_call_ids(messages)
        resamples = min(1, self.config.max_retries)  # LLM_MAX_RETRIES=0 means no retry of any kind
        while True:
            assembler = ResponseAssembler()
            await self.relay(
                lambda client: client.aio.models.generate_content_stream(model=model, contents=contents, config=config),
                assembler,
                on_text,
            )
            try:
                return response_to_chat(assembler, taken)
            except MalformedTurnError as exc:
                if resamples <= 0 or assembler.text:  # text already shown is not asked for again
                    raise
                resamples -= 1
                logger.info("Asking Gemini again: %s", exc)

    def status_of(self, exc: Exception) -> int | None:
        return exc.code if isinstance(exc, genai_errors.APIError) else None

    def context_too_long(self, exc: Exception, status: int | None) -> bool:
        """Gemini says "The input token count (N) exceeds the maximum number of tokens allowed" in a 400 when the
        conversation does not fit the model's window: that is not the client's mistake but the history's size."""
        return status == 400 and "token count" in str(exc).lower()
