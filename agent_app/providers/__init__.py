"""Provider adapters and the factory that picks one from the configuration.

Adapters are created once per :class:`~agent_app.llm_config.LLMConfig` and reused, so their SDK clients
keep their connection pools; a provider's module (and so its SDK) is imported only when that provider is
configured, which keeps start-up light and lets one SDK be absent when only the other is used.
"""

from __future__ import annotations

import threading

from agent_app.llm_config import GEMINI, OPENAI_COMPATIBLE, LLMConfig, UnknownProviderError
from agent_app.providers.base import ProviderAdapter, ProviderError

__all__ = [
    "ProviderAdapter",
    "ProviderError",
    "clear_adapter_cache",
    "create_adapter",
    "get_adapter",
]

_MAX_CACHED = 8
_cache: dict[LLMConfig, ProviderAdapter] = {}
_lock = threading.Lock()


def create_adapter(config: LLMConfig) -> ProviderAdapter:
    """A new adapter for ``config``; ``Unknown LLM provider: <name>`` for a provider we do not have."""
    if config.provider == OPENAI_COMPATIBLE:
        from agent_app.providers.openai_compatible import OpenAICompatibleAdapter

        return OpenAICompatibleAdapter(config)
    if config.provider == GEMINI:
        from agent_app.providers.gemini import GeminiAdapter

        return GeminiAdapter(config)
    raise UnknownProviderError(config.provider)


def get_adapter(config: LLMConfig) -> ProviderAdapter:
    """The cached adapter of ``config``, created on first use."""
    adapter = _cache.get(config)
    if adapter is not None:
        return adapter
    with _lock:
        adapter = _cache.get(config)
        if adapter is None:
            if len(_cache) >= _MAX_CACHED:  # settings changed many times: drop the oldest client
                _cache.pop(next(iter(_cache)))
            adapter = create_adapter(config)
            _cache[config] = adapter
    return adapter


def clear_adapter_cache() -> None:
    """Forget every cached adapter (tests; after rotating a key the old client is simply unused)."""
    with _lock:
        _cache.clear()
