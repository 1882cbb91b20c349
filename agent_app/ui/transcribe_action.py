"""The transcript panel's Transcribe and Find speakers actions: each button queues a job on the server (the
app's executor with SQLite, the job queue with PostgreSQL) and the panel draws the job's progress and Stop
from storage, so closing the tab loses nothing and every tab and process shows the same progress.

While a job of the asset goes, a fragment redraws only the progress every :data:`POLL_SECONDS` (its timer:
:mod:`~agent_app.ui.refresh_timer`); when the job
ends the whole page reruns, so the panel reads the new transcript.
"""

from __future__ import annotations

import streamlit as st

from agent_app.storage import StorageError
from agent_app.transcriptions.manager import TranscriptionManager
from agent_app.transcriptions.models import INTERRUPTED_TRANSCRIPTION, JobKind, Transcription, TranscriptionBusyError
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.refresh_timer import render_refresh_timer

POLL_SECONDS = 0.5
"""How often an open panel looks at a running transcription's progress."""

_DOING: dict[JobKind, str] = {"transcript": "Transcribing", "speakers": "Finding speakers"}
_STOPPED: dict[JobKind, str] = {"transcript": "Transcription stopped.", "speakers": "Finding speakers stopped."}
_INTERRUPTED: dict[JobKind, str] = {
    "transcript": INTERRUPTED_TRANSCRIPTION,
    "speakers": "Finding speakers stopped with its server; press Find speakers to start it again",
}


def queue_transcription(
    transcriptions: TranscriptionManager, asset_id: str, key: str, language: str | None, kind: JobKind = "transcript"
) -> None:
    """The Transcribe (or Find speakers) button: queue a job; a refusal (one already going, storage failing)
    is shown, not raised."""
    try:
        transcriptions.start(asset_id, language, kind)
    except TranscriptionBusyError as exc:
        st.session_state[f"{key}_notice"] = str(exc)
    except StorageError as exc:
        st.session_state[f"{key}_notice"] = f"The transcription could not be queued: {exc}"
    else:
        st.session_state.pop(f"{key}_notice", None)


def render_transcription_progress(transcriptions: TranscriptionManager, asset_id: str, key: str) -> None:
    """The asset's latest job as storage holds it: progress and Stop while it goes, then how it ended."""
    notice = st.session_state.get(f"{key}_notice")
    if notice:
        st.info(escape_markdown(str(notice)), icon=":material/info:")
    job = transcriptions.latest(asset_id)
    active = job is not None and job.active
    st.fragment(_progress)(transcriptions, asset_id, key, active)


def _progress(transcriptions: TranscriptionManager, asset_id: str, key: str, was_active: bool) -> None:
    job = transcriptions.latest(asset_id)
    if (job is not None and job.active) != was_active:
        st.rerun()  # it started or ended elsewhere (another tab, a worker): redraw the panel around it
    if job is None:
        return
    if job.active:
        render_refresh_timer(POLL_SECONDS, name=key)
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            text = job.message or ("Waiting for a worker" if job.state == "queued" else _DOING[job.kind])
            st.progress(min(1.0, max(0.0, job.fraction)), text=escape_markdown(text))
            st.button(
                "Stop",
                key=f"{key}_stop",
                icon=":material/stop_circle:",
                on_click=_stop,
                args=(transcriptions, job),
                disabled=job.stop_requested,
            )
    elif job.state == "error" and job.error:
        st.error(escape_markdown(job.error), icon=":material/error:")  # it can quote a file name or arguments
    elif job.state == "interrupted":
        st.warning(escape_markdown(_INTERRUPTED[job.kind]), icon=":material/warning:")
    elif job.state == "stopped":
        st.caption(_STOPPED[job.kind])


def _stop(transcriptions: TranscriptionManager, job: Transcription) -> None:
    try:
        transcriptions.stop(job.id)
    except StorageError as exc:
        st.toast(escape_markdown(f"Stop could not be recorded: {exc}"), icon=":material/error:")
