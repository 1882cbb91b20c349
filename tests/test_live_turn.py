"""What a tab shows of a run it read a moment before drawing it: the run may have started (or been asked to
stop, or ended) between that read and the wake-up version the tab compares from then on, and no event may
follow for seconds (a model slow to answer), so the live part must not keep the older state."""

from __future__ import annotations

from agent_app.runs.manager import ThreadRunManager
from agent_app.session_stores import AgentStore
from agent_app.storage import Storage
from agent_app.types import ChatMessage
from agent_app.ui.live_status import QUEUED_LABEL, STATUS_LABELS, run_label
from agent_app.ui.live_turn import live_run
from tests.run_support import wait_until
from tests.test_runs import GatedJob


def test_a_run_read_as_queued_that_started_before_the_tab_drew_it_is_shown_asking_the_assistant(
    storage: Storage,
) -> None:
    chat = storage.create_conversation(storage.create_project("p").id).id
    job = GatedJob()
    manager = ThreadRunManager(storage, job, heartbeat_seconds=0.05)
    try:
        read_before = manager.start(chat, None, ChatMessage(role="user", content="Slow to answer?"))
        assert read_before.state == "queued"  # what the tab read, before it drew the run
        wait_until(lambda: manager.events(read_before.id), 10, "the job did not start")  # then it started
        state: dict[str, object] = {}
        live = live_run(state, manager, read_before, [])
        agent = AgentStore(state)
        agent.set_status(live.view.status)
        assert run_label(live.run, agent) == STATUS_LABELS["sending"] != QUEUED_LABEL
    finally:
        job.release.set()
        manager.close()
