"""One change applied to every string of JSON data, keys included, the data kept as it is when none needs it.

Why one walker: a tool's result gets its invisible characters escaped (:mod:`agent_app.prompt`) and a
provider's answer its lone surrogates replaced (:mod:`agent_app.providers.provider_text`). Both look at data
that almost never needs the change, and looking costs less than copying, so data with nothing to change comes
back as the same object.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def map_strings(data: object, pattern: re.Pattern[str], change: Callable[[str], str]) -> object:
    """``data`` with ``change`` applied to every string (keys included) and tuples made lists, or ``data``
    itself when no string matches ``pattern`` and every value is of a plain JSON type already."""
    return data if _unchanged(data, pattern) else _changed(data, change)


def _changed(data: object, change: Callable[[str], str]) -> object:
    if isinstance(data, str):
        return change(data)
    if isinstance(data, dict):
        return {change(str(key)): _changed(value, change) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_changed(item, change) for item in data]
    return data


def _unchanged(data: object, pattern: re.Pattern[str]) -> bool:
    """Whether :func:`_changed` would return equal data of the same types: plain strings ``pattern`` does not
    match, dicts with such keys, lists (anything else of those kinds is rebuilt)."""
    if isinstance(data, str):
        return type(data) is str and pattern.search(data) is None
    if isinstance(data, dict):
        return type(data) is dict and all(
            type(key) is str and pattern.search(key) is None and _unchanged(value, pattern)
            for key, value in data.items()
        )
    if isinstance(data, list):
        return type(data) is list and all(_unchanged(item, pattern) for item in data)
    return not isinstance(data, tuple)
