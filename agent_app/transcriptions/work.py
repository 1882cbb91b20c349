"""The work of a transcription job: the same media call the ``transcribe_video`` tool makes (so the two
share the transcript cache), or the speaker turns of a ``speakers`` job (kept in that cache too), on the
asset storage holds, with the settings read when the job started."""

from __future__ import annotations

from collections.abc import Callable

from agent_app.media import TranscriptionRequest, find_speakers, transcribe_asset
from agent_app.media.transcriber import TranscriptionError
from agent_app.settings import Settings
from agent_app.storage import ProjectMediaLibrary, Storage
from agent_app.transcriptions.execution import TranscriptionControl
from agent_app.transcriptions.models import Transcription
from agent_app.types import ToolEnvironment


def transcribe_stored(
    storage: Storage, settings: Callable[[], Settings], job: Transcription, control: TranscriptionControl
) -> None:
    """Transcribe the asset of ``job``, or find its speakers, into the cache; raises
    :class:`TranscriptionError` when it cannot."""
    asset = storage.get_asset(job.asset_id)
    project_id = storage.asset_project_id(job.asset_id)
    if asset is None or project_id is None:
        raise TranscriptionError("The file was removed before it could be transcribed")
    env = ToolEnvironment(
        media=ProjectMediaLibrary(storage, project_id),
        data_dir=storage.data_dir,
        settings=settings(),
        report_progress=control.report,
        cancellation=control.cancellation,
    )
    if job.kind == "speakers":
        find_speakers(env, asset)
    else:
        transcribe_asset(env, asset, TranscriptionRequest(job.language))
