"""Transcription backends: ``local`` (offline Moonshine), ``openai`` and ``gemini``; chosen in :mod:`.config`."""
