"""Media work for the tools: audio extraction (PyAV), transcription backends, the transcript cache and
subtitle export. See :mod:`agent_app.media.transcription` for the ``transcribe_video`` tool's logic."""
