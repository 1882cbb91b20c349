"""Another server process on the same database, for the tests that need two at once: ``python -m
tests.storage_process ACTION DATA_DIR URL [CONVERSATION]`` gets ready, prints ``ready``, waits for a line
on its standard input (the test sends it to every process at once), does ``ACTION`` and prints one JSON
line saying what happened.

Actions: ``open`` (open the storage: its schema upgrade races the others'), ``start-run`` (open it first,
then start a run in CONVERSATION with a question of its own).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agent_app.runs.models import RunBusyError
from agent_app.storage import PostgresStorage
from agent_app.types import ChatMessage, now_ms


def _ready_then_wait() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def main(argv: list[str]) -> int:
    action, data_dir, url = argv[0], Path(argv[1]), argv[2]
    if action == "open":
        _ready_then_wait()
        storage = PostgresStorage(data_dir, url)
        print(json.dumps({"opened": True, "version": storage.schema_version()}))
        storage.close_pool()
        return 0
    storage = PostgresStorage(data_dir, url)
    try:
        runs = storage.run_store()
        question = ChatMessage(role="user", content=f"asked by {os.getpid()}")
        _ready_then_wait()
        try:
            run = runs.create_run(argv[3], None, [question], owner=str(os.getpid()), lease_until=now_ms() + 60_000)
        except RunBusyError as exc:
            print(json.dumps({"busy": str(exc), "question": question.id}))
        else:
            print(json.dumps({"started": run.id, "question": question.id}))
    finally:
        storage.close_pool()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
