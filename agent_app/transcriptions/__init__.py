"""Transcriptions the page asks for, as jobs on the server: a row in storage with its progress, Stop and lease
(:mod:`~agent_app.transcriptions.models`), executed on the app's executor with SQLite or on the job queue
with PostgreSQL (:mod:`~agent_app.transcriptions.manager`), so closing the tab loses nothing and every tab
and process reads the same progress. This package's ``__init__`` imports nothing (storage depends on it)."""
