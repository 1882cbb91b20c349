"""Runs: one orchestrator turn of a conversation, executed on the server and recorded in storage.

:mod:`~agent_app.runs.models` (records), :mod:`~agent_app.runs.run_store` (the storage interface),
:mod:`~agent_app.runs.manager` (start/stop/read, the executor and leases), :mod:`~agent_app.runs.turn`
(the job: the orchestrator writing events), :mod:`~agent_app.runs.view` (what a reader folds the events
into). This package's ``__init__`` imports nothing, so storage can depend on the models without a cycle.
"""
