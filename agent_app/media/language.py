"""Spoken-language names and tags → ISO 639-1 codes, the one form every backend accepts.

Users and models write "en-US", "EN", "en_GB", "English" or "français"; OpenAI's API rejects anything but a
bare ISO 639-1 code (``en``), Whisper's ``verbose_json`` answers with English names ("english"), and the
cache key must not split one language into five. So the tool normalizes once, here.
"""

from __future__ import annotations

import re

LANGUAGE_NAMES = {
    "english": "en", "german": "de", "deutsch": "de", "french": "fr", "français": "fr", "francais": "fr",
    "spanish": "es", "español": "es", "espanol": "es", "italian": "it", "italiano": "it", "portuguese": "pt",
    "português": "pt", "dutch": "nl", "polish": "pl", "russian": "ru", "ukrainian": "uk", "japanese": "ja",
    "chinese": "zh", "mandarin": "zh", "korean": "ko", "arabic": "ar", "hindi": "hi", "turkish": "tr",
    "swedish": "sv", "norwegian": "no", "danish": "da", "finnish": "fi", "greek": "el", "czech": "cs",
    "hebrew": "he", "indonesian": "id", "vietnamese": "vi", "thai": "th", "romanian": "ro", "hungarian": "hu",
}  # fmt: skip
"""English (and a few native) names of common languages; Whisper reports the English ones."""

_TAG = re.compile(r"^([a-z]{2,3})(?:[-_][a-z0-9]{1,8})*$")


def language_code(value: str | None) -> str | None:
    """``value`` as a lower-case ISO 639 code (``"en-US"`` → ``"en"``, ``"English"`` → ``"en"``); ``None``
    for empty or ``"auto"``. Raises :class:`ValueError` for something that is neither a tag nor a known name."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in ("", "auto"):
        return None
    if text in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[text]
    match = _TAG.match(text)
    if match is None:
        raise ValueError(f"{value!r} is not a language code such as 'en' or 'fr-CA', nor a language name")
    return match.group(1)
