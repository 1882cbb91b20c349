"""The transcript panel under the player: the asset's transcript as timestamped segments of clickable words
(searchable, paged, the segment and the word at the playhead marked), a Transcribe button (a job on the
server, its progress drawn from storage: :mod:`agent_app.ui.transcribe_action`), SRT / WebVTT / text / JSON
downloads, corrections and speakers (see :mod:`agent_app.ui.transcript_edits_panel`).

It reads the whole transcript from the cache, never from the chat (the model only sees a bounded excerpt).
Widget keys carry the asset id, so switching assets never carries a page or a click over.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import streamlit as st

from agent_app.media import (
    Transcript,
    saved_edited_transcript,
    to_json,
    to_srt,
    to_text,
    to_vtt,
    to_vtt_words,
)
from agent_app.storage import StorageError
from agent_app.transcriptions.manager import TranscriptionManager
from agent_app.types import MediaAsset, ToolEnvironment
from agent_app.ui.formatting import count_of, escape_markdown, format_duration
from agent_app.ui.pickers import unique_labels
from agent_app.ui.player import plays_in_page
from agent_app.ui.resources import get_transcription_manager
from agent_app.ui.transcribe_action import queue_transcription, render_transcription_progress
from agent_app.ui.transcript_edits_panel import (
    TranscriptEditor,
    render_correction_form,
    render_speakers,
    start_editing,
)
from agent_app.ui.transcript_element import PageActions, page_rows, transcript_page
from agent_app.ui.transcript_view import (
    Page,
    matching_indexes,
    page_holding,
    pages_of,
    search_words,
    segment_at,
)


@dataclass(frozen=True)
class TranscriptExport:
    """One download offered for a transcript, written only when asked for: a long transcript's every format
    written on each redraw would be paid for buttons nobody clicked."""

    label: str
    file_name: str
    mime_type: str
    transcript: Transcript
    writer: Callable[[Transcript], str]

    @property
    def data(self) -> str:
        return self.writer(self.transcript)


def transcript_exports(transcript: Transcript, asset_name: str) -> list[TranscriptExport]:
    """The SRT, WebVTT, plain-text and JSON downloads of ``transcript``, named after the asset, and WebVTT
    with word timings when the transcript has timed words."""
    stem = PurePath(asset_name).stem or "transcript"
    exports = [
        TranscriptExport("SRT", f"{stem}.srt", "application/x-subrip", transcript, to_srt),
        TranscriptExport("WebVTT", f"{stem}.vtt", "text/vtt", transcript, to_vtt),
        TranscriptExport("Text", f"{stem}.txt", "text/plain", transcript, to_text),
        TranscriptExport("JSON", f"{stem}.json", "application/json", transcript, to_json),
    ]
    if any(segment.words for segment in transcript.segments):
        exports.insert(2, TranscriptExport("Words", f"{stem}.words.vtt", "text/vtt", transcript, to_vtt_words))
    return exports


SPOKEN_LANGUAGES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "pl": "Polish", "ru": "Russian", "uk": "Ukrainian", "tr": "Turkish", "ja": "Japanese",
    "zh": "Chinese", "ko": "Korean", "ar": "Arabic", "hi": "Hindi",
}  # fmt: skip
"""The languages offered beside Auto (detection) on the page; the assistant may name any other."""


def _language_name(code: str | None) -> str:
    return "Auto (detect)" if code is None else SPOKEN_LANGUAGES.get(code, code)


def _on_search(key: str) -> None:
    st.session_state[f"{key}_page"] = 0  # a new search starts at its first hit


def _on_turn_page(key: str, step: int) -> None:
    st.session_state[f"{key}_page"] = int(st.session_state.get(f"{key}_page", 0)) + step


def _on_jump(key: str, numbers: dict[str, int]) -> None:
    st.session_state[f"{key}_page"] = numbers.get(str(st.session_state.get(f"{key}_jump")), 0)


def _current_page(key: str, pages: list[Page], shown: list[int], current: int | None) -> int:
    """The page to draw: where the user paged to, unless the playhead moved onto another segment since
    the last draw (a click, the playing video): then the page holding that segment, so it stays in view."""
    page = int(st.session_state.get(f"{key}_page", 0))
    if current != st.session_state.get(f"{key}_followed"):
        st.session_state[f"{key}_followed"] = current
        if current is not None:
            position = bisect.bisect_left(shown, current)
            if position < len(shown) and shown[position] == current:
                page = page_holding(pages, position)
    page = min(max(page, 0), len(pages) - 1)
    st.session_state[f"{key}_page"] = page
    return page


def _render_pager(key: str, pages: list[Page], page: int) -> None:
    """Previous / next and a jump to a stretch of the clip by its times (no bare page number)."""
    labels = unique_labels({str(p.number): p.label for p in pages})  # the choice comes back as its label
    numbers = {label: int(number) for number, label in labels.items()}
    st.session_state[f"{key}_jump"] = labels[str(page)]
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        st.button(
            "Earlier",
            key=f"{key}_previous",
            icon=":material/chevron_left:",
            on_click=_on_turn_page,
            args=(key, -1),
            disabled=page == 0,
        )
        st.selectbox(
            "Jump to",
            options=list(numbers),
            key=f"{key}_jump",
            on_change=_on_jump,
            args=(key, numbers),
            label_visibility="collapsed",
            width=150,
        )
        st.button(
            "Later",
            key=f"{key}_next",
            icon=":material/chevron_right:",
            on_click=_on_turn_page,
            args=(key, 1),
            disabled=page >= len(pages) - 1,
        )


def _render_segments(transcript: Transcript, env: ToolEnvironment, key: str, actions: PageActions) -> None:
    segments = transcript.segments
    query = str(st.session_state.get(f"{key}_search") or "")
    st.text_input(
        "Search the transcript",
        key=f"{key}_search",
        on_change=_on_search,
        args=(key,),
        placeholder="Words said in the clip",
        icon=":material/search:",
        label_visibility="collapsed",
    )
    words = search_words(query)
    shown = matching_indexes(segments, words)
    if words:
        found = f"{count_of(len(shown), 'segment')} {'matches' if len(shown) == 1 else 'match'}"
        st.caption(f"{found} “{escape_markdown(query.strip())}”")
        if not shown:
            return
    playhead = env.context.playback_time_ms if env.context is not None else -1
    current = segment_at([segment.start_ms for segment in segments], segments, playhead)
    pages = pages_of(shown, segments)
    page = _current_page(key, pages, shown, current)
    if len(pages) > 1:
        _render_pager(key, pages, page)
    rows = page_rows(transcript, shown[pages[page].first : pages[page].last], words)
    transcript_page(key, rows, current, actions)


def _saved(asset: MediaAsset, env: ToolEnvironment) -> Transcript | None:
    if env.media is None or env.data_dir is None:
        return None
    try:
        return saved_edited_transcript(env.media, asset.id)
    except StorageError:  # the media store out of reach: the page above says so
        return None


def render_transcript_panel(  # noqa: PLR0913 - the editor is keyword-only, and optional
    asset: MediaAsset,
    env: ToolEnvironment,
    on_seek: Callable[[int], None],
    transcript: Transcript | None = None,
    transcriptions: TranscriptionManager | None = None,
    *,
    editor: TranscriptEditor | None = None,
) -> None:
    """Draw the transcript panel of ``asset`` (see the module docstring); ``transcript`` (with the user's
    edits) when the caller has already read it this run; ``transcriptions``: where Transcribe queues its job
    (default: the process's, for the storage ``env.settings`` names); ``editor`` saves corrections and
    speaker names (none: the transcript is read-only)."""
    if transcriptions is None:
        transcriptions = get_transcription_manager(env.settings)
    key = f"transcript_{asset.id}"
    st.subheader("Transcript", anchor=False)
    if transcript is None:
        transcript = _saved(asset, env)
    with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):
        language = st.selectbox(
            "Spoken language",
            [None, *SPOKEN_LANGUAGES],
            format_func=_language_name,
            key=f"{key}_language",
            width=200,
        )
        run = st.button(
            "Transcribe",
            key=f"{key}_run",
            icon=":material/subtitles:",
            help="Runs offline by default; no chat needed. A file already transcribed is answered from the cache.",
        )
    if run:
        queue_transcription(transcriptions, asset.id, key, language)
    render_transcription_progress(transcriptions, asset.id, key)
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
                data=functools.partial(export.writer, export.transcript),  # written on click
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
    if editor is not None:
        render_speakers(asset, transcriptions, editor, key, transcript)
        render_correction_form(asset, editor, key, transcript)
    actions = PageActions(seek=on_seek, edit=functools.partial(start_editing, key), in_page=plays_in_page())
    _render_segments(transcript, env, key, actions)
