"""Text a provider sent, made something UTF-8 can carry.

Why: a provider's JSON may hold a lone surrogate escape (``"\\ud800"``: half of a character, from a buggy or
hostile server, or a stream that cut an emoji's escaped pair in two). Python's JSON reader turns it into a
``str`` that no UTF-8 encoder accepts, so the answer could be neither stored nor sent to the page or a
route's client: the run ended in an internal error and the answer was lost. The adapters pass every text
and tool argument of an answer through here, and a lone surrogate becomes U+FFFD (the replacement character).
"""

from __future__ import annotations

import re
from typing import Any

from agent_app.json_strings import map_strings

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""In a ``str`` a surrogate is always lone: the JSON reader joins an escaped pair into one character."""

REPLACEMENT = "\ufffd"


def valid_text(text: str) -> str:
    """``text``, with any lone surrogate replaced by U+FFFD (``text`` itself when it has none)."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def valid_data(value: Any) -> Any:
    """JSON data with :func:`valid_text` applied to every string, keys included; ``value`` itself when nothing
    changes, as for most answers (:func:`~agent_app.json_strings.map_strings`)."""
    return map_strings(value, _LONE_SURROGATE, valid_text)
