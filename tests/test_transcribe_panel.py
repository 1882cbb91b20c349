"""The transcript panel in Streamlit's AppTest: Transcribe runs the real tool (offline backend, real
storage), segments seek the player, downloads are offered and their contents parse as subtitles."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import srt
import webvtt
from streamlit.testing.v1 import AppTest

from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.storage import SqliteStorage
from agent_app.types import MediaAsset
from agent_app.ui.formatting import escape_markdown
from agent_app.ui.transcript_panel import transcript_exports
from fake_llm import FakeLLMServer, delayed, transcription_reply
from tests.media_samples import make_video
from tests.run_support import wait_until
from tests.transcribe_support import new_workspace, transcribe_on_page
from tests.transcript_page_support import click_on_page, page_indexes, page_words
from testsupport.media_factory import SENTENCES, MediaFile, silent_mp4, speech_mp4, speech_track

pytestmark = pytest.mark.usefixtures("offline_transcription")


def panel_page(data_dir: str, project_id: str, asset_json: str, editable: bool = False) -> None:
    """The panel as the page uses it: under a player whose playhead ``on_seek`` moves."""
    from pathlib import Path

    import streamlit as st

    from agent_app.settings import Settings
    from agent_app.storage import ProjectMediaLibrary, SqliteStorage
    from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
    from agent_app.ui.transcript_panel import render_transcript_panel

    asset = MediaAsset.model_validate_json(asset_json)
    storage = SqliteStorage(Path(data_dir))
    playhead = int(st.session_state.get("playhead_ms", 0))
    media = ProjectMediaLibrary(storage, project_id)
    env = ToolEnvironment(
        context=AgentContext(project_id=project_id, media_assets=[asset], playback_time_ms=playhead),
        media=media,
        data_dir=Path(data_dir),
        settings=Settings.model_validate({"AGENT_DATA_DIR": data_dir}),  # Transcribe queues on this storage
    )

    def on_seek(milliseconds: int) -> None:
        st.session_state["playhead_ms"] = milliseconds

    st.text(f"playhead={playhead}")
    render_transcript_panel(asset, env, on_seek, editor=media if editable else None)


def app_for(tmp_path: Path, media: Path, name: str, *, editable: bool = False) -> tuple[AppTest, MediaAsset]:
    workspace = new_workspace(tmp_path / "data")
    asset = workspace.add(media, name)
    args = (str(tmp_path / "data"), workspace.project_id, asset.model_dump_json(), editable)
    return AppTest.from_function(panel_page, args=args, default_timeout=60), asset


@pytest.mark.slow
def test_transcribe_button_fills_the_panel_and_segments_seek_the_player(tmp_path: Path) -> None:
    spans = speech_mp4(tmp_path / "talk.mp4")
    app, asset = app_for(tmp_path, tmp_path / "talk.mp4", "Talk.mp4")
    app.run()
    assert not app.exception
    assert len(app.download_button) == 0
    assert any("No transcript yet" in c.value for c in app.caption)

    transcribe_on_page(app, asset.id, tmp_path / "data")
    assert not app.exception and not app.error
    assert [b.label for b in app.download_button] == ["SRT", "WebVTT", "Words", "Text", "JSON"]
    rows = page_words(app)["rows"]
    assert len(rows) >= len(spans)
    said = " ".join(word[2] for row in rows for word in row["words"]).lower()
    assert "quick brown fox" in said and "camera" in said
    for row in rows:  # every word has its time, inside its segment and in order (what a click seeks to)
        starts = [word[0] for word in row["words"]]
        assert starts == sorted(starts) and row["start"] <= starts[0] and starts[-1] <= row["end"]
    assert rows[1]["start"] == pytest.approx(spans[1][0], abs=600)

    click_on_page(app, "seek", rows[1]["words"][2][0])  # a click on the second segment's third word
    assert int(app.text[0].value.split("=")[1]) == rows[1]["words"][2][0]
    assert page_words(app)["current"] == rows[1]["index"]  # the segment at the playhead stands out

    fresh = AppTest.from_function(panel_page, args=app.args, default_timeout=60)  # a restart: from the cache
    fresh.run()
    assert [b.label for b in fresh.download_button] == ["SRT", "WebVTT", "Words", "Text", "JSON"]


def test_a_failing_transcription_shows_the_reason(tmp_path: Path) -> None:
    app, asset = app_for(tmp_path, silent_mp4(tmp_path / "silent.mp4"), "Screen.mp4")
    app.run()
    transcribe_on_page(app, asset.id, tmp_path / "data")
    assert not app.exception
    assert (
        len(app.error) == 1
        and "no audio stream" in app.error[0].value
        and escape_markdown("Screen.mp4") in app.error[0].value
    )
    assert len(app.download_button) == 0


def test_exports_are_named_after_the_asset_and_parse_as_subtitles() -> None:
    transcript = Transcript(
        duration_ms=5000,
        backend="local",
        model="m",
        segments=[TranscriptSegment(start_ms=100, end_ms=900, text="Hello."), TranscriptSegment(start_ms=1000,
                  end_ms=2500, text="A <b> & c.")],
    )  # fmt: skip
    exports = {e.label: e for e in transcript_exports(transcript, "My Talk.final.mp4")}
    assert {e.file_name for e in exports.values()} == {
        "My Talk.final.srt", "My Talk.final.vtt", "My Talk.final.txt", "My Talk.final.json"
    }  # fmt: skip
    assert [s.content for s in srt.parse(exports["SRT"].data, ignore_errors=False)] == ["Hello.", "A <b> & c."]
    captions = webvtt.from_buffer(io.StringIO(exports["WebVTT"].data)).captions
    assert [c.start for c in captions] == ["00:00:00.100", "00:00:01.000"]
    assert exports["Text"].data == "Hello.\nA <b> & c.\n"


def test_a_transcript_with_missing_stretches_says_so_in_the_panel(tmp_path: Path) -> None:
    """A recording with a 3 s hole in its audio: the panel warns, so the transcript never passes as whole."""
    samples, spans = speech_track(SENTENCES[:2], rate=48_000)
    media = MediaFile(samples[None], 48_000, codec="aac", hole=(spans[0][1], 3_000)).write(tmp_path / "paused.mkv")
    app, asset = app_for(tmp_path, media, "Paused.mkv")
    app.run()
    transcribe_on_page(app, asset.id, tmp_path / "data")
    assert not app.exception and not app.error
    assert len(app.warning) == 1 and "gaps" in app.warning[0].value


HOSTILE = "![x](http://198.51.100.7/p.png) **loud**"
"""Markdown that, drawn unescaped, would load an image from another host and shout."""


def seeded_app(
    tmp_path: Path, transcript: Transcript, media: Path | None = None, *, editable: bool = False
) -> tuple[AppTest, MediaAsset]:
    """The panel for a clip (default: a silent one) whose transcript is already in the cache (no
    transcription run: fast)."""
    from agent_app.media.transcript_cache import CacheKey, TranscriptCache

    app, asset = app_for(tmp_path, media or silent_mp4(tmp_path / "clip.mp4"), "Clip.mp4", editable=editable)
    path = next((tmp_path / "data").rglob("*.mp4"))
    cache = TranscriptCache(tmp_path / "data")
    cache.put(CacheKey(cache.content_hash(path), transcript.backend, transcript.model), transcript, asset.id)
    return app, asset


@pytest.mark.parametrize(("count", "expected"), [(1, "1 segment ·"), (2, "2 segments ·"), (0, "0 segments ·")])
def test_the_segment_count_is_pluralized_correctly(tmp_path: Path, count: int, expected: str) -> None:
    segments = [TranscriptSegment(start_ms=i * 1000, end_ms=i * 1000 + 900, text=f"Line {i}.") for i in range(count)]
    app, _ = seeded_app(tmp_path, Transcript(duration_ms=5000, backend="local", model="m", segments=segments))
    app.run()
    assert not app.exception
    assert any(caption.value.startswith(expected) for caption in app.caption), [c.value for c in app.caption]


def test_a_tool_error_quoting_a_file_name_is_shown_literally(tmp_path: Path) -> None:
    name = "![x](p.png) **loud**"  # a file name keeps no "/": the image is relative, still fetched
    app, asset = app_for(tmp_path, silent_mp4(tmp_path / "silent.mp4"), f"{name}.mp4")
    app.run()
    transcribe_on_page(app, asset.id, tmp_path / "data")
    assert not app.exception and len(app.error) == 1
    error = str(app.error[0].value)
    assert "no audio stream" in error
    assert escape_markdown(name) in error and name not in error


def test_transcript_notes_are_shown_literally(tmp_path: Path) -> None:
    transcript = Transcript(duration_ms=5000, backend="local", model="m", notes=[f"Audio missing near {HOSTILE}"])
    app, _ = seeded_app(tmp_path, transcript)
    app.run()
    assert not app.exception and len(app.warning) == 1
    warning = str(app.warning[0].value)
    assert escape_markdown(HOSTILE) in warning and HOSTILE not in warning


def _parent_of(node: Any, key: str) -> Any:
    """The block directly holding the widget ``key`` in an AppTest element tree."""
    for child in getattr(node, "children", {}).values():
        if getattr(child, "key", None) == key:
            return node
        found = _parent_of(child, key)
        if found is not None:
            return found
    return None


def test_downloads_stay_in_a_wrapping_row_on_a_phone(tmp_path: Path) -> None:
    """Columns stack below 640 px (downloads one under another); a wrapping row keeps them compact. (The
    segments' rows are the page component's, laid out in the browser: see the browser tests.)"""
    segments = [TranscriptSegment(start_ms=i * 1000, end_ms=i * 1000 + 900, text=f"Line {i}.") for i in range(2)]
    app, asset = seeded_app(tmp_path, Transcript(duration_ms=5000, backend="local", model="m", segments=segments))
    app.run()
    assert not app.exception
    key = f"transcript_{asset.id}"
    downloads = _parent_of(app._tree, f"{key}_download_srt")
    flex = downloads.proto.flex_container
    assert flex.direction == flex.Direction.HORIZONTAL and flex.wrap
    assert [child.key for child in downloads.children.values()] == [
        f"{key}_download_{n}" for n in ("srt", "webvtt", "text", "json")
    ]


def test_search_in_an_hour_long_transcript_lists_only_the_hits_with_a_count(tmp_path: Path) -> None:
    from tests.creator_support import LATE_INDEX, LATE_PHRASE, hour_transcript

    app, asset = seeded_app(tmp_path, hour_transcript())
    app.run()
    key = f"transcript_{asset.id}"
    assert len(page_indexes(app)) == 25  # one page of the 900 segments
    app.text_input(key=f"{key}_search").set_value("Northern  QUAY").run()
    assert not app.exception
    assert any(c.value.startswith("1 segment matches") for c in app.caption), [c.value for c in app.caption]
    assert page_indexes(app) == [LATE_INDEX]
    (hit,) = page_words(app)["rows"]
    marked = [word[2] for word in hit["words"] if word[3]]
    assert marked == ["northern", "quay"]
    assert LATE_PHRASE.split()[0] in [word[2] for word in hit["words"]]

    app.text_input(key=f"{key}_search").set_value("catch number").run()
    assert any(c.value.startswith("898 segments match") for c in app.caption)
    app.text_input(key=f"{key}_search").set_value("zebra").run()
    assert any(c.value.startswith("0 segments match") for c in app.caption) and not page_indexes(app)


def test_long_transcripts_page_by_time_with_earlier_later_and_a_jump(tmp_path: Path) -> None:
    from tests.creator_support import hour_transcript

    app, asset = seeded_app(tmp_path, hour_transcript())
    app.run()
    key = f"transcript_{asset.id}"
    assert app.button(key=f"{key}_previous").disabled and not app.number_input  # no bare page number box
    app.button(key=f"{key}_next").click().run()
    assert page_indexes(app)[0] == 25
    jump = app.selectbox(key=f"{key}_jump")
    labels = list(jump.options)  # stretches of the clip, not page numbers
    assert labels[1] == "1:40 – 3:19" and labels[-1] == "58:20 – 59:59" and len(labels) == 36
    assert jump.value == "1:40 – 3:19"
    assert "13:20 – 14:59" in labels  # the README's example
    jump.select_index(len(labels) - 1).run()
    assert page_indexes(app)[-1] == 899
    assert app.button(key=f"{key}_next").disabled
    app.button(key=f"{key}_previous").click().run()
    assert page_indexes(app)[0] == 850


def test_the_segment_at_the_playhead_is_marked_and_its_page_shown(tmp_path: Path) -> None:
    from tests.creator_support import LATE_INDEX, hour_transcript

    transcript = hour_transcript()
    app, _ = seeded_app(tmp_path, transcript)
    app.session_state["playhead_ms"] = transcript.segments[LATE_INDEX].start_ms + 500  # the video played there
    app.run()
    assert LATE_INDEX in page_indexes(app)
    assert page_words(app)["current"] == LATE_INDEX


def test_downloads_are_written_only_when_clicked(tmp_path: Path) -> None:
    from tests.creator_support import hour_transcript

    app, _ = seeded_app(tmp_path, hour_transcript())
    app.run()
    assert [b.label for b in app.download_button] == ["SRT", "WebVTT", "Text", "JSON"]
    for button in app.download_button:
        assert button.proto.deferred_file_id and not button.proto.url  # a callable, not bytes sent each run


def test_a_transcription_queued_in_one_tab_shows_its_progress_and_stop_in_another(
    tmp_path: Path, openai_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job lives on the server: the tab that queued it is left alone (as if closed), a second tab draws
    its progress from storage and stops it; the first tab, drawn again, says so."""
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "openai")
    monkeypatch.setenv("TRANSCRIBE_MODEL", "fake-whisper")
    openai_llm.transcription.push(delayed(transcription_reply("never heard"), 60.0))
    first, asset = app_for(tmp_path, make_video(tmp_path / "tone.mp4", seconds=2.0), "Tone.mp4")
    key = f"transcript_{asset.id}"
    first.run()
    first.button(key=f"{key}_run").click().run()
    wait_until(lambda: len(openai_llm.transcription.requests) == 1, 60, "the job never reached the transcriber")
    second = AppTest.from_function(panel_page, args=first.args, default_timeout=60)
    second.run()
    assert not second.exception and len(second.get("progress")) == 1
    second.button(key=f"{key}_stop").click().run()
    store = SqliteStorage(tmp_path / "data").transcription_store()
    wait_until(lambda: store.latest(asset.id).state == "stopped", 10)  # type: ignore[union-attr]
    first.run()
    assert not first.exception and len(first.get("progress")) == 0
    assert any(caption.value == "Transcription stopped." for caption in first.caption)


def test_find_speakers_queued_in_one_tab_shows_its_progress_and_stop_in_another(tmp_path: Path) -> None:
    """Find speakers is a job on the server like Transcribe: the tab that queued it is left alone, a second
    tab draws its progress from storage and stops it. Another diarization holds the process's one (this
    test holds its lock), so the job waits, whatever the machine's speed, and no model is loaded."""
    from agent_app.media import speakers

    segments = [TranscriptSegment(start_ms=0, end_ms=1500, text="Hello there.")]
    transcript = Transcript(duration_ms=2000, backend="local", model="m", segments=segments)
    first, asset = seeded_app(tmp_path, transcript, make_video(tmp_path / "tone.mp4", seconds=2.0), editable=True)
    key = f"transcript_{asset.id}"
    store = SqliteStorage(tmp_path / "data").transcription_store()
    first.run()
    with speakers._lock:
        first.button(key=f"{key}_speakers_run").click().run()
        assert not first.exception and len(first.get("progress")) == 1

        def waiting() -> bool:
            job = store.latest(asset.id)
            return job is not None and job.kind == "speakers" and job.state == "running" and bool(job.message)

        wait_until(waiting, 30, "the speakers job never started on the server")
        second = AppTest.from_function(panel_page, args=first.args, default_timeout=60)
        second.run()
        assert not second.exception
        (bar,) = second.get("progress")
        assert bar.proto.text == "Reading the file"
        second.button(key=f"{key}_stop").click().run()
        wait_until(lambda: store.latest(asset.id).state == "stopped", 10)  # type: ignore[union-attr]
    first.run()
    assert not first.exception and len(first.get("progress")) == 0
    assert any(caption.value == "Finding speakers stopped." for caption in first.caption)
    assert first.button(key=f"{key}_speakers_run")  # nothing was found: it can be asked for again
