"""Another server process running the real turn on shared storage, for the tests that need a second one:
``python -m tests.run_process MODE LEASE_MS HEARTBEAT_SECONDS`` with the app's settings in its environment
(``AGENT_DATA_DIR``, ``AGENT_DATABASE_URL``, the model's). MODE ``thread``: the thread run manager; ``queue``:
the queue run manager with no worker of its own (runs go to the database's queue).

It prints ``ready``, then reads one JSON command a line and answers with one JSON line:
``{"start": CONVERSATION, "question": TEXT}`` → ``{"run": ID}``; ``{"stop": RUN}`` → ``{"stopped": BOOL}``.
Each run it executes prints ``{"ended": ID, "lost": BOOL, "state": STATE}`` when its job returns.
"""

from __future__ import annotations

import functools
import json
import sys
import threading

from agent_app.runs.execution import RunControl, RunEnd
from agent_app.runs.manager import StoredRunManager, ThreadRunManager
from agent_app.runs.models import Run
from agent_app.runs.turn import run_turn
from agent_app.settings import load_settings
from agent_app.storage import open_storage
from agent_app.types import ChatMessage
from agent_app.ui.resources import current_assistant

_print_lock = threading.Lock()


def say(line: dict[str, object]) -> None:
    with _print_lock:
        print(json.dumps(line), flush=True)


def main(argv: list[str]) -> int:
    mode, lease_ms, heartbeat = argv[0], int(argv[1]), float(argv[2])
    settings = load_settings()
    storage = open_storage(settings)
    turn = functools.partial(run_turn, storage, current_assistant)

    def job(run: Run, control: RunControl) -> RunEnd:
        end = turn(run, control)
        say({"ended": run.id, "lost": control.lost, "state": end.state})
        return end

    manager: StoredRunManager
    if mode == "thread":
        manager = ThreadRunManager(storage, job, lease_ms=lease_ms, heartbeat_seconds=heartbeat)
    else:
        from agent_app.runs.queue_manager import QueueRunManager

        assert settings.database_url is not None
        manager = QueueRunManager.open(storage, settings.database_url, lease_ms=lease_ms, heartbeat_seconds=heartbeat)
    say({"ready": True, "owner": manager.owner})
    for line in sys.stdin:
        command = json.loads(line)
        if "start" in command:
            run = manager.start(command["start"], None, ChatMessage(role="user", content=command["question"]))
            say({"run": run.id})
        elif "stop" in command:
            say({"stopped": manager.stop(command["stop"])})
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
