"""Times as people read them: one formatter for media positions (page, prompt, tool notes, subtitles) and
one for how long something took (tool notes and cards, exports)."""

from __future__ import annotations


def clock_text(ms: int, *, millis: str | None = None, hour_digits: int = 1) -> str:
    """``83_000`` → ``"1:23"``, ``3_723_000`` → ``"1:02:03"`` (hours only when there are any).

    ``millis`` adds the milliseconds after that separator (``"1:23.456"``); ``hour_digits=2`` always
    writes zero-padded hours, as SubRip and WebVTT require (``"00:01:23,456"``). Negative times read as 0.
    """
    hours, rest = divmod(max(0, int(ms)), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, fraction = divmod(rest, 1000)
    text = f"{minutes:02d}:{seconds:02d}" if hours or hour_digits > 1 else f"{minutes}:{seconds:02d}"
    if hours or hour_digits > 1:
        text = f"{hours:0{hour_digits}d}:{text}"
    return f"{text}{millis}{fraction:03d}" if millis is not None else text


def elapsed_text(duration_ms: int) -> str:
    """How long a tool ran, the one way the app writes it: ``"11 ms"``, ``"2.4 s"``, ``"1:05"`` past a minute
    (never ``"0.0 s"`` for a quick call)."""
    if duration_ms < 1000:
        return f"{max(0, duration_ms)} ms"
    if duration_ms < 60_000:
        return f"{duration_ms / 1000:.1f} s"
    return clock_text(duration_ms)
