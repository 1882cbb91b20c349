"""The transcript panel's editing parts: the form that corrects one segment (opened by its ✎ on the page)
and the speakers: finding them (opt-in, slow: a job on the server, its progress and Stop drawn with
Transcribe's, see :mod:`agent_app.ui.transcribe_action`) and naming S1, S2….

Edits are saved through a :class:`TranscriptEditor` (the project's media library), beside the machine's
transcript, never over it; a refused edit is shown with the text still in the form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import streamlit as st

from agent_app.media import Transcript
from agent_app.transcript_edits import SegmentCorrection, checked_correction, checked_speaker_name
from agent_app.transcriptions.manager import TranscriptionManager
from agent_app.types import MediaAsset
from agent_app.ui.formatting import count_of, escape_markdown, format_duration
from agent_app.ui.transcribe_action import queue_transcription


class TranscriptEditor(Protocol):
    """Where the panel saves a user's edits of an asset's transcript."""

    def save_correction(self, asset_id: str, correction: SegmentCorrection) -> None: ...

    def remove_correction(self, asset_id: str, start_ms: int) -> None: ...

    def name_speaker(self, asset_id: str, speaker: str, name: str) -> None: ...


def start_editing(key: str, index: int) -> None:
    """Open the correction form on segment ``index`` (the page's ✎ calls this)."""
    st.session_state[f"{key}_editing"] = index
    st.session_state.pop(f"{key}_correct_error", None)


def _close(key: str) -> None:
    st.session_state.pop(f"{key}_editing", None)
    st.session_state.pop(f"{key}_correct_error", None)


@dataclass(frozen=True)
class _Editing:
    """The segment the form corrects: its asset, its start and what the machine heard there."""

    editor: TranscriptEditor
    asset_id: str
    key: str
    start_ms: int
    heard: str


def _save(editing: _Editing, field: str) -> None:
    key = editing.key
    try:
        text = checked_correction(str(st.session_state.get(field) or ""))
        if text == editing.heard:
            editing.editor.remove_correction(editing.asset_id, editing.start_ms)
        else:
            correction = SegmentCorrection(start_ms=editing.start_ms, original=editing.heard, text=text)
            editing.editor.save_correction(editing.asset_id, correction)
    except Exception as exc:  # noqa: BLE001 - shown in the form, which keeps the text typed
        st.session_state[f"{key}_correct_error"] = str(exc)
        return
    _close(key)


def _restore(editing: _Editing) -> None:
    editing.editor.remove_correction(editing.asset_id, editing.start_ms)
    _close(editing.key)


def render_correction_form(asset: MediaAsset, editor: TranscriptEditor, key: str, transcript: Transcript) -> None:
    """The form correcting the segment being edited, if one is."""
    index = st.session_state.get(f"{key}_editing")
    if not isinstance(index, int) or not 0 <= index < len(transcript.segments):
        return
    segment = transcript.segments[index]
    heard = segment.original_text or segment.text
    field = f"{key}_correct_text_{index}"
    editing = _Editing(editor, asset.id, key, segment.start_ms, heard)
    st.session_state.setdefault(field, segment.text)
    with st.form(f"{key}_correct_form"):
        st.text_area(f"Correct the segment at {format_duration(segment.start_ms)}", key=field, height=100)
        if segment.original_text is not None:
            st.caption(f"Heard: “{escape_markdown(heard)}”")
        error = st.session_state.get(f"{key}_correct_error")
        if error:
            st.error(escape_markdown(str(error)), icon=":material/error:")
        with st.container(horizontal=True, gap="small"):
            st.form_submit_button(
                "Save correction",
                type="primary",
                on_click=_save,
                args=(editing, field),
            )
            st.form_submit_button("Cancel", on_click=_close, args=(key,))
            if segment.original_text is not None:
                st.form_submit_button("Restore what was heard", on_click=_restore, args=(editing,))


def _rename(editor: TranscriptEditor, asset_id: str, key: str, label: str, field: str) -> None:
    try:
        editor.name_speaker(asset_id, label, checked_speaker_name(str(st.session_state.get(field) or "")))
    except Exception as exc:  # noqa: BLE001 - shown beside the names, the page goes on
        st.session_state[f"{key}_speaker_error"] = str(exc)
    else:
        st.session_state.pop(f"{key}_speaker_error", None)


def speaker_labels(transcript: Transcript) -> list[str]:
    """The speaker labels of ``transcript`` in the order they first speak."""
    return list(dict.fromkeys(segment.speaker for segment in transcript.segments if segment.speaker))


def render_speakers(
    asset: MediaAsset, transcriptions: TranscriptionManager, editor: TranscriptEditor, key: str, transcript: Transcript
) -> None:
    """Name the speakers found, or offer to find them (a job queued where Transcribe queues its own)."""
    labels = speaker_labels(transcript)
    if not labels:
        st.button(
            "Find speakers",
            key=f"{key}_speakers_run",
            icon=":material/record_voice_over:",
            help="Labels who speaks when (S1, S2…), offline. Slow: several times the transcription's time.",
            on_click=queue_transcription,
            args=(transcriptions, asset.id, key, None, "speakers"),
        )
        return
    with st.expander(f"{count_of(len(labels), 'speaker')} · rename them", icon=":material/record_voice_over:"):
        for label in labels:
            field = f"{key}_speaker_{label}"
            st.session_state.setdefault(field, transcript.speaker_names.get(label, ""))
            st.text_input(
                f"Name of {label}",
                key=field,
                placeholder=label,
                on_change=_rename,
                args=(editor, asset.id, key, label, field),
            )
        error = st.session_state.get(f"{key}_speaker_error")
        if error:
            st.error(escape_markdown(str(error)), icon=":material/error:")
