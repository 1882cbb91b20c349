"""What both SDK adapters share: one SDK client per event loop, the relay of a streamed answer into its
assembler and the caller's text sink, and the one mapping of an SDK's exception to :class:`ProviderError`.

Why one client per loop: each SDK's async client keeps a connection pool whose connections belong to the
event loop that opened them, and both SDKs' documentation makes one client and reuses it. Each adapter says
only what differs: how to make its client, and how to read its SDK's HTTP status and context-length refusal.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from abc import abstractmethod
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from agent_app.llm_config import LLMConfig
from agent_app.providers.base import ProviderAdapter, ProviderError, describe_failure, failure_kind
from agent_app.providers.provider_loop import PacedTextSink

ClientT = TypeVar("ClientT")
ChunkT = TypeVar("ChunkT")
ChunkT_contra = TypeVar("ChunkT_contra", contravariant=True)


class StreamAssembler(Protocol[ChunkT_contra]):
    """Puts one stream's chunks back together into the whole answer."""

    @property
    def text(self) -> str:
        """The answer's text so far (kept on a failure)."""
        ...

    def add(self, chunk: ChunkT_contra) -> str:
        """Take one chunk; returns its answer text (empty when it has none)."""
        ...


class SDKAdapter(ProviderAdapter, Generic[ClientT]):
    """An adapter on an SDK's async client. Its clients are kept per event loop, referenced while the loop
    lives (a collected client closes its transport) and dropped with it."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientT] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @abstractmethod
    def new_client(self) -> ClientT:
        """The SDK's async client of :attr:`config` (key, base URL, timeout, retries)."""

    @abstractmethod
    def status_of(self, exc: Exception) -> int | None:
        """The HTTP status of the SDK's exception, when it is an HTTP error."""

    @abstractmethod
    def context_too_long(self, exc: Exception, status: int | None) -> bool:
        """Whether the provider refused the request because the conversation exceeds the model's window."""

    def describe(self, exc: Exception) -> str:
        """The failure for the server log (secrets removed); an adapter may add a hint."""
        return describe_failure(exc)

    @property
    def client(self) -> ClientT:
        """The client of the running event loop, made at its first request."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            with self._lock:
                client = self._clients.get(loop)
                if client is None:
                    client = self._clients[loop] = self.new_client()
        return client

    def provider_error(self, exc: Exception, partial_text: str) -> ProviderError:
        """The SDK's exception as our :class:`ProviderError`, its kind from the status the adapter reads."""
        status = self.status_of(exc)
        kind = failure_kind(exc, status, context_too_long=self.context_too_long(exc, status))
        return ProviderError(self.describe(exc), kind, partial_text=partial_text)

    async def relay(
        self,
        request: Callable[[ClientT], Awaitable[AsyncIterable[ChunkT]]],
        assembler: StreamAssembler[ChunkT],
        on_text: PacedTextSink,
    ) -> None:
        """Open the stream with ``request`` on this loop's client, feed each chunk to ``assembler`` and its text to
        ``on_text`` as it arrives; every SDK, transport and parse failure is a :class:`ProviderError` carrying
        the text so far."""
        stream: AsyncIterable[ChunkT] | None = None
        try:
            stream = await request(self.client)
            async for chunk in stream:
                text = assembler.add(chunk)
                if text and (pending := on_text(text)) is not None:
                    await pending  # the reader is behind: the provider's stream waits (backpressure)
        except asyncio.CancelledError:  # cancelled between two reads (a held stream's reader left): close it now
            await _close(stream)
            raise
        except ProviderError as exc:  # raised by ``on_text`` (a bound of the caller's): its kind stands
            await _close(stream)
            raise ProviderError(str(exc), exc.kind, partial_text=assembler.text) from None
        except Exception as exc:  # every SDK, transport and parse failure is a provider error
            raise self.provider_error(exc, assembler.text) from exc


async def _close(stream: object) -> None:
    """Close the provider's response of a stream we stop reading (an exception between two reads leaves it
    open otherwise): OpenAI's ``AsyncStream.close``, google-genai's async generator's ``aclose``."""
    for name in ("close", "aclose"):
        close = getattr(stream, name, None)
        if close is not None:
            await close()
            return
