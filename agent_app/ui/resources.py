"""Process-wide objects the page shares between sessions and with the routes.

Storage (:func:`agent_app.storage.open_storage`, one instance per ``AGENT_DATA_DIR``) and the tool
registry (:func:`agent_app.tool_plugins.enabled_tool_registry`, built once per setting) are the ones the
routes use, so a changed setting takes effect without a restart. The run manager of a storage owns the
executor every session's runs go to; a run reads the settings (model, tools) when it starts.
"""

from __future__ import annotations

import functools
import threading

from agent_app.chat_handler import ChatHandler
from agent_app.runs.manager import RunManager, StoredRunManager, ThreadRunManager, lease_ms_for
from agent_app.runs.turn import Assistant, run_turn
from agent_app.settings import Settings, load_settings
from agent_app.storage import Storage, open_storage
from agent_app.tool_plugins import usable_tool_registry


def current_assistant() -> Assistant:
    """What a starting run works with: the settings now (read here, once per run, and passed down), the chat
    handler called in-process, offering the enabled tools (none when they are misconfigured: the sidebar says
    why, and the model can still answer)."""
    settings = load_settings()
    registry, _ = usable_tool_registry(settings.enabled_tools)
    return Assistant(ChatHandler(settings, registry.to_tool_schemas()), registry, settings)


_managers: dict[Storage, StoredRunManager] = {}
_managers_lock = threading.Lock()


def get_run_manager(settings: Settings) -> RunManager:
    """The runs of the storage the settings name (one manager per storage, shared by sessions): on the
    thread executor with SQLite, on the job queue with PostgreSQL (and this process's worker, unless
    ``AGENT_IN_PROCESS_WORKERS`` is 0)."""
    storage = open_storage(settings)
    with _managers_lock:
        manager = _managers.get(storage)
        if manager is None:
            manager = _managers[storage] = _new_manager(settings, storage)
        return manager


def _new_manager(settings: Settings, storage: Storage) -> StoredRunManager:
    job = functools.partial(run_turn, storage, current_assistant)
    lease_ms = lease_ms_for(settings.db_busy_timeout_ms)
    if settings.database_url is None:
        return ThreadRunManager(storage, job, lease_ms=lease_ms)
    from agent_app.runs.queue_manager import QueueRunManager  # procrastinate only where PostgreSQL is

    return QueueRunManager.open(
        storage, settings.database_url, job, in_process_workers=settings.in_process_workers, lease_ms=lease_ms
    )


def close_run_managers() -> None:
    """Close and forget every storage's run manager (a process, or a test, done with its runs): their
    workers end once their runs are done, and the next :func:`get_run_manager` makes a new one."""
    with _managers_lock:
        managers = list(_managers.values())
        _managers.clear()
    for manager in managers:
        manager.close()
