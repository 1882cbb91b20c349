"""The chat handler: a :class:`~agent_app.types.ChatRequest` in, a :class:`~agent_app.types.ChatResponse` out,
or a :class:`~agent_app.errors.ChatError` whose kind says what failed.

A run's orchestrator sends its requests through a :class:`ChatHandler` (typed objects, no bytes); the HTTP
route awaits one with the request it parsed from the body. Both go through
:func:`~agent_app.request_validation.check_chat_request` here, so they accept the same histories, and
bytes exist only at the HTTP edge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, replace

from agent_app.context_budget import context_budget
from agent_app.context_fit import ContextTooLargeError, ContextWindow, FittedHistory
from agent_app.errors import ChatError, ErrorKind, provider_failure
from agent_app.llm_config import (
    LLMConfig,
    LLMConfigurationError,
    MissingConfigurationError,
    UnknownProviderError,
    load_llm_config,
)
from agent_app.log_redaction import StreamRedactor, redact_secrets, secret_spellings
from agent_app.prompt import build_system_prompt
from agent_app.providers import ProviderAdapter, get_adapter
from agent_app.providers.base import ProviderError, describe_failure
from agent_app.providers.provider_loop import PacedTextSink, TextSink, run_streaming
from agent_app.request_validation import check_chat_request
from agent_app.settings import Settings
from agent_app.tool_plugins import ToolConfigurationError, enabled_tool_registry
from agent_app.types import AgentContext, Cancellation, ChatMessage, ChatRequest, ChatResponse, ToolSchema

logger = logging.getLogger(__name__)


def _discard(delta: str) -> None:
    """The text sink of a caller that does not show text as it arrives."""


def current_tool_schemas(settings: Settings) -> list[ToolSchema]:
    """The enabled tools' internal schemas (the registry is built once per tool configuration)."""
    return enabled_tool_registry(settings.enabled_tools).to_tool_schemas()


def _configured_adapter(settings: Settings) -> tuple[LLMConfig, ProviderAdapter]:
    """The configuration and its adapter, or the 502 naming the setting that stops them."""
    try:
        config = load_llm_config(settings)
        return config, get_adapter(config)
    except MissingConfigurationError as exc:
        raise ChatError(ErrorKind.MISSING_CONFIGURATION, str(exc)) from None
    except UnknownProviderError as exc:
        raise ChatError(ErrorKind.UNKNOWN_PROVIDER, str(exc)) from None
    except LLMConfigurationError as exc:
        raise ChatError(ErrorKind.INVALID_CONFIGURATION, str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - an SDK that cannot build its client is a provider failure
        logger.warning("LLM provider error: cannot create the adapter: %s", describe_failure(exc))
        raise provider_failure(ErrorKind.PROVIDER_FAILED) from None


def _schemas(tool_schemas: Sequence[ToolSchema] | None, settings: Settings) -> list[ToolSchema]:
    try:
        return list(tool_schemas) if tool_schemas is not None else current_tool_schemas(settings)
    except (ToolConfigurationError, ValueError) as exc:
        raise ChatError(ErrorKind.TOOL_CONFIGURATION, f"Tool configuration error: {exc}") from None


@dataclass(frozen=True)
class _Call:
    """What a provider request is sent with: the configuration, its adapter, and the context window."""

    config: LLMConfig
    adapter: ProviderAdapter
    window: ContextWindow

    @property
    def system_prompt(self) -> str:
        return self.window.system_prompt

    @property
    def tool_schemas(self) -> Sequence[ToolSchema]:
        return self.window.tool_schemas


class ChatHandler:
    """The chat path, for one run (the page's :class:`~agent_app.types.ChatClient`: :meth:`send`) or one route
    request (:meth:`answer`, awaited on the server's loop). What a run's requests share is worked out at the
    first one and kept: the configuration and its adapter, the tools, the model's budget, and the system
    prompt of the run's workspace context (a run sends the same context object with
    every request; another object gets its own prompt).

    ``settings``: those read where the work started (the run, the route request); ``tool_schemas`` default
    to the enabled tools' (a run passes the registry its orchestrator executes with, so the two can never
    disagree)."""

    def __init__(self, settings: Settings, tool_schemas: Sequence[ToolSchema] | None = None) -> None:
        self._settings = settings
        self._tool_schemas = tool_schemas
        self._call: _Call | None = None
        self._secret_spellings = secret_spellings(settings.secrets)
        """A provider's answer may quote the key (a hostile or confused one): redacted as the logs are."""

    def call(self, context: AgentContext | None) -> _Call:
        """The request's call; raises :class:`ChatError` when the configuration or the tools cannot be used."""
        call = self._call
        if call is None:
            config, adapter = _configured_adapter(self._settings)
            schemas = _schemas(self._tool_schemas, self._settings)
            budget = context_budget(config.model, config.context_tokens, config.max_output_tokens)
            prompt = build_system_prompt(context, schemas)
            call = _Call(config, adapter, ContextWindow(budget, prompt, schemas, context))
        elif call.window.context is not context:
            window = call.window
            prompt = build_system_prompt(context, window.tool_schemas)
            call = replace(call, window=ContextWindow(window.budget, prompt, window.tool_schemas, context))
        self._call = call
        return call

    async def answer(self, request: ChatRequest, on_text: PacedTextSink = _discard) -> ChatResponse:
        """One streamed provider call for ``request``, its history fitted into the model's window (once more,
        smaller, if the provider still finds it too long), awaited on the caller's loop: no thread is held,
        and cancelling the task closes the provider's response. ``on_text`` gets the answer's text as it
        arrives (an awaitable it returns holds the provider's stream until it is done: backpressure). Raises
        only :class:`ChatError`: a provider failure is logged with its cause (secrets removed) and raised with
        the spec's bare text."""
        call, fitted = _prepare(request, self)
        redactor = StreamRedactor(self._secret_spellings)
        bound = _StreamBound(self._settings)

        def shown(delta: str) -> Awaitable[None] | None:
            bound.add(delta)
            text = redactor.feed(delta)
            return on_text(text) if text else None

        async def send(messages: Sequence[ChatMessage]) -> ChatResponse:
            return await call.adapter.stream(
                messages, system_prompt=call.system_prompt, tool_schemas=call.tool_schemas, on_text=shown
            )

        try:
            async with bound.timeout():
                try:
                    response = await send(fitted.messages)
                except Exception as exc:
                    if not _refused_as_too_long(exc):
                        raise
                    fitted = call.window.refit(request.messages, fitted, str(exc))
                    response = await send(fitted.messages)
        except Exception as exc:  # noqa: BLE001 - the handler's contract: a typed error, never anything else
            raise _failure(call, exc, self._secret_spellings) from None
        rest = redactor.flush()
        if rest and (pending := on_text(rest)) is not None:
            await pending
        content = redact_secrets(response.content, self._secret_spellings)
        return response.model_copy(update={"content": content, "context": fitted.report})

    def send(
        self, request: ChatRequest, *, on_text: TextSink | None = None, cancellation: Cancellation | None = None
    ) -> ChatResponse:
        """:meth:`answer` for a thread (a run's worker), on the thread's own event loop
        (:func:`~agent_app.providers.provider_loop.run_streaming`): once ``cancellation`` is set the
        provider's response is closed at once and :class:`~agent_app.cancellation.StopRequested` raised, with
        the text so far; an exception of ``on_text`` (the caller's own) ends the request and propagates."""
        return run_streaming(lambda sink: self.answer(request, sink), on_text=on_text, cancellation=cancellation)


class _StreamBound:
    """How long and how much one answer may stream (``LLM_MAX_STREAM_SECONDS``, ``LLM_MAX_ANSWER_CHARS``):
    a provider streaming forever is cut with :attr:`~agent_app.errors.ErrorKind.ANSWER_TOO_LONG`, its text
    so far kept."""

    def __init__(self, settings: Settings) -> None:
        self.max_seconds = settings.llm_max_stream_seconds
        self.max_chars = settings.llm_max_answer_chars
        self.parts: list[str] = []
        self.chars = 0

    def add(self, delta: str) -> None:
        """Count ``delta``; past the size bound, the :class:`ProviderError` that ends the stream."""
        self.parts.append(delta)
        self.chars += len(delta)
        if self.chars > self.max_chars:
            raise ProviderError(
                f"the answer passed LLM_MAX_ANSWER_CHARS ({self.max_chars} characters)", ErrorKind.ANSWER_TOO_LONG
            )

    @contextlib.asynccontextmanager
    async def timeout(self) -> AsyncIterator[None]:
        """The time bound around the whole answer (its retry too)."""
        try:
            async with asyncio.timeout(self.max_seconds):
                yield
        except TimeoutError:
            raise ProviderError(
                f"the answer passed LLM_MAX_STREAM_SECONDS ({self.max_seconds:g} s)",
                ErrorKind.ANSWER_TOO_LONG,
                partial_text="".join(self.parts),
            ) from None


def _prepare(request: ChatRequest, setup: ChatHandler) -> tuple[_Call, FittedHistory]:
    """The whole history checked, then the call and the history fitted into the model's context window
    (:mod:`agent_app.context_fit`)."""
    check_chat_request(request)
    call = setup.call(request.context)
    try:
        return call, call.window.fit(request.messages)
    except ContextTooLargeError as exc:
        raise ChatError(ErrorKind.TOO_LARGE_FOR_MODEL, str(exc)) from None


def _refused_as_too_long(exc: Exception) -> bool:
    """The provider's own context-length refusal, met before any text arrived: worth one smaller retry."""
    return isinstance(exc, ProviderError) and exc.kind is ErrorKind.CONTEXT_TOO_LONG and not exc.partial_text


def _failure(call: _Call, exc: Exception, spellings: Sequence[str]) -> ChatError:
    """What a failed provider call becomes: logged with its cause, raised with the bare text and its kind."""
    provider, model = call.config.provider, call.config.model
    if isinstance(exc, ContextTooLargeError):  # the retry's fitting, with the provider's own numbers
        return ChatError(ErrorKind.TOO_LARGE_FOR_MODEL, str(exc))
    if isinstance(exc, ProviderError):
        logger.warning("LLM provider error (provider %s, model %s): %s", provider, model, exc)
        return provider_failure(exc.kind, redact_secrets(exc.partial_text, spellings))
    logger.error("LLM provider error (provider %s, model %s): %s", provider, model, describe_failure(exc))
    return provider_failure(ErrorKind.PROVIDER_FAILED)
