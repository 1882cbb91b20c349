"""Transcription backends: ``local`` (offline faster-whisper, the default), ``moonshine`` (offline Moonshine),
``openai`` and ``gemini``; chosen in :mod:`.config`."""
