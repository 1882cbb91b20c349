"""The transcript panel under the player: the asset's cached transcript as clickable timestamped
segments, a Transcribe button that runs the ``transcribe_video`` tool directly (no LLM needed), and
downloads as SRT, WebVTT and plain text.

It reads the full transcript from the transcript cache, never from the chat: the model only ever sees
a bounded excerpt, the page shows everything. Widget keys carry the asset id so that switching assets
never carries a page number or a click over to another asset.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import streamlit as st

from agent_app.media.subtitles import to_srt, to_text, to_vtt
from agent_app.media.transcript import Transcript
from agent_app.media.transcript_cache import load_full_transcript
from agent_app.registry import ToolRegistry
from agent_app.types import MediaAsset, ToolEnvironment
from agent_app.ui.formatting import count_of, escape_markdown, format_duration

TOOL_NAME = "transcribe_video"
SEGMENTS_PER_PAGE = 40
"""Each segment is a button; a few dozen per page keep reruns fast on an hour-long transcript."""

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~])")


@dataclass(frozen=True)
class TranscriptExport:
    """One download offered for a transcript."""

    label: str
    file_name: str
    mime_type: str
    data: str


def transcript_exports(transcript: Transcript, asset_name: str) -> list[TranscriptExport]:
    """The SRT, WebVTT and plain-text downloads of ``transcript``, named after the asset."""
    stem = PurePath(asset_name).stem or "transcript"
    return [
        TranscriptExport("SRT", f"{stem}.srt", "application/x-subrip", to_srt(transcript)),
        TranscriptExport("WebVTT", f"{stem}.vtt", "text/vtt", to_vtt(transcript)),
        TranscriptExport("Text", f"{stem}.txt", "text/plain", to_text(transcript)),
    ]


def _escape(text: str) -> str:
    """Transcribed speech shown as text, never interpreted as Markdown, HTML or LaTeX."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _run_tool(asset: MediaAsset, env: ToolEnvironment, registry: ToolRegistry, key: str) -> None:
    """Run ``transcribe_video`` for ``asset`` with a progress bar; errors are shown, not raised."""
    tool = registry.get(TOOL_NAME)
    if tool is None:
        st.error(f"The {TOOL_NAME} tool is not enabled (AGENT_ENABLED_TOOLS).", icon=":material/error:")
        return
    bar = st.progress(0.0, text="Starting")

    def report(fraction: float, message: str) -> None:
        bar.progress(min(1.0, max(0.0, fraction)), text=message)

    try:
        tool.execute({"assetId": asset.id}, dataclasses.replace(env, report_progress=report))
    except Exception as exc:  # noqa: BLE001 - every failure is shown to the user, the page goes on
        bar.empty()
        st.session_state[f"{key}_error"] = str(exc)
    else:
        bar.empty()
        st.session_state.pop(f"{key}_error", None)


def _render_segments(transcript: Transcript, env: ToolEnvironment, key: str, on_seek: Callable[[int], None]) -> None:
    segments = transcript.segments
    pages = max(1, -(-len(segments) // SEGMENTS_PER_PAGE))
    page = 1
    if pages > 1:
        page = int(
            st.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1, step=1, key=f"{key}_page")
        )
    playhead = env.context.playback_time_ms if env.context is not None else -1
    first = (page - 1) * SEGMENTS_PER_PAGE
    with st.container(height=420 if len(segments) > 8 else "content", border=False):
        for index, segment in enumerate(segments[first : first + SEGMENTS_PER_PAGE], start=first):
            # One unwrapping row, not columns: columns stack on a phone, each time on a line of its own
            # above its text; this row keeps the button at its own width and lets the text wrap beside it.
            row = st.container(horizontal=True, vertical_alignment="center", gap="small", wrap=False)
            row.button(
                format_duration(segment.start_ms),
                key=f"{key}_seek_{index}",
                on_click=on_seek,
                args=(segment.start_ms,),
                help="Move the player here",
                width="content",
            )
            text = _escape(segment.text)
            current = segment.start_ms <= playhead < max(segment.end_ms, segment.start_ms + 1)
            row.markdown(f"**{text}**" if current else text, width="stretch")


def render_transcript_panel(
    asset: MediaAsset, env: ToolEnvironment, registry: ToolRegistry, on_seek: Callable[[int], None]
) -> None:
    """Draw the transcript panel of ``asset`` (see the module docstring)."""
    key = f"transcript_{asset.id}"
    st.subheader("Transcript", anchor=False)
    transcript = load_full_transcript(env, asset.id)
    if st.button(
        "Transcribe",
        key=f"{key}_run",
        icon=":material/subtitles:",
        help="Runs offline by default; no chat needed. A file already transcribed is answered from the cache.",
    ):
        _run_tool(asset, env, registry, key)
        transcript = load_full_transcript(env, asset.id)
    error = st.session_state.get(f"{key}_error")
    if error:
        st.error(escape_markdown(str(error)), icon=":material/error:")  # it can quote a file name or arguments
    if transcript is None:
        st.caption("No transcript yet. Transcribe it here, or ask the assistant what is said in the clip.")
        return
    language = f" · language {escape_markdown(transcript.language)}" if transcript.language else ""
    count = len(transcript.segments)
    st.caption(
        f"{count_of(count, 'segment')} · {format_duration(transcript.duration_ms)}{language} · "
        f"{escape_markdown(transcript.backend)} ({escape_markdown(transcript.model)})"
    )
    with st.container(horizontal=True, gap="small"):  # a row that wraps on a phone instead of a stack of three
        for export in transcript_exports(transcript, asset.name):
            st.download_button(
                export.label,
                data=export.data,
                file_name=export.file_name,
                mime=export.mime_type,
                key=f"{key}_download_{export.label.lower()}",
                icon=":material/download:",
                on_click="ignore",
            )
    for note in transcript.notes:  # damaged or missing stretches: the transcript is not the whole file
        st.warning(escape_markdown(note), icon=":material/warning:")
    if not transcript.segments:
        st.info("No speech was recognized in this file.", icon=":material/info:")
        return
    _render_segments(transcript, env, key, on_seek)
