"""The ``transcribe_video`` tool end to end with the offline backend: real synthesized speech in a real
MP4, imported into the real SQLite storage, transcribed by the bundled Moonshine model.

Real transcriptions are few (each ~1-2 s): the module shares one transcribed workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_app.media import TranscriptionError, saved_transcript, transcribe_asset
from agent_app.media.audio import AudioInput
from agent_app.media.transcript_types import Transcript, TranscriptSegment
from agent_app.settings import load_settings
from agent_app.tool_plugins import build_tool_registry
from agent_app.types import MediaAsset
from agent_app.validation import ToolArgumentsError, parse_tool_args
from plugins.transcribe_video import MAX_RESULT_SEGMENTS, tool_result
from tests.storage_backends import stored_path
from tests.transcribe_support import SETTINGS, Workspace, new_workspace, run_transcribe_tool
from testsupport.media_factory import SENTENCES, silent_mp4, speech_mp4, word_error_rate

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="module")
def offline_settings() -> Iterator[None]:
    """The default backend, whatever the developer's shell exports."""
    with pytest.MonkeyPatch.context() as patch:
        for name in SETTINGS:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def speech_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, int, str]]]:
    path = tmp_path_factory.mktemp("speech") / "talk.mp4"
    return path, speech_mp4(path)


@pytest.fixture(scope="module")
def transcribed(
    tmp_path_factory: pytest.TempPathFactory, speech_file: tuple[Path, list[tuple[int, int, str]]]
) -> tuple[Workspace, MediaAsset, dict[str, Any]]:
    """One workspace whose speech video has been transcribed once (the shared real transcription)."""
    workspace = new_workspace(tmp_path_factory.mktemp("data"))
    asset = workspace.add(speech_file[0], "Talk.mp4")
    result = run_transcribe_tool({}, workspace.env())
    return workspace, asset, result


@pytest.mark.slow
def test_transcribes_synthesized_speech_with_word_error_rate_under_15_percent(
    transcribed: tuple[Workspace, MediaAsset, dict[str, Any]],
) -> None:
    _, asset, result = transcribed
    assert result["assetId"] == asset.id and result["language"] == "en" and result["cached"] is False
    assert word_error_rate(" ".join(SENTENCES), result["text"]) < 0.15
    assert set(result) >= {"assetId", "durationMs", "language", "text", "segments"}
    json.dumps(result)  # it goes to the model as JSON


@pytest.mark.slow
def test_segment_times_increase_and_stay_inside_the_media(
    transcribed: tuple[Workspace, MediaAsset, dict[str, Any]], speech_file: tuple[Path, list[tuple[int, int, str]]]
) -> None:
    _, asset, result = transcribed
    segments = result["segments"]
    assert len(segments) >= len(SENTENCES)
    assert asset.duration_ms is not None and result["durationMs"] == pytest.approx(asset.duration_ms, abs=50)
    starts = [s["startMs"] for s in segments]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    for segment in segments:
        assert 0 <= segment["startMs"] <= segment["endMs"] <= result["durationMs"]
    # Each sentence's words are found near where it was spoken (VAD pads ~0.2 s around speech).
    for start_ms, _end_ms, sentence in speech_file[1]:
        first_word = sentence.split()[1].lower()
        hit = next(s for s in segments if first_word in s["text"].lower())
        assert hit["startMs"] == pytest.approx(start_ms, abs=600)


@pytest.mark.slow
def test_progress_is_reported_from_start_to_done(transcribed: tuple[Workspace, MediaAsset, dict[str, Any]]) -> None:
    workspace, _, _ = transcribed
    fractions = [fraction for fraction, _ in workspace.progress]
    assert fractions and fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("Transcribing" in message for _, message in workspace.progress)


@pytest.mark.slow
def test_cache_hit_answers_without_decoding_again_and_survives_a_restart(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]]
) -> None:
    """After the first run the media file is overwritten with zeros (same size, same modification time,
    so the content-hash memo still matches): any decode would now fail. A second run in a fresh process
    (a restart) must still answer, from the cache."""
    workspace = new_workspace(tmp_path / "data")
    asset = workspace.add(speech_file[0])
    first = run_transcribe_tool({"assetId": asset.id}, workspace.env())
    assert first["cached"] is False
    media = stored_path(workspace.storage, asset.id)
    assert media is not None
    stat = media.stat()
    media.write_bytes(b"\0" * stat.st_size)
    os.utime(media, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    workspace.storage.close()
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from tests.transcribe_support import run_transcribe_tool\n"
        "from agent_app.storage import ProjectMediaLibrary, SqliteStorage\n"
        "from agent_app.types import AgentContext, MediaAsset, ToolEnvironment\n"
        "data, project, asset = Path(sys.argv[1]), sys.argv[2], MediaAsset.model_validate_json(sys.argv[3])\n"
        "storage = SqliteStorage(data)\n"
        "env = ToolEnvironment(context=AgentContext(project_id=project, media_assets=[asset]),\n"
        "                      media=ProjectMediaLibrary(storage, project), data_dir=data)\n"
        "print(json.dumps(run_transcribe_tool({}, env)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data"), workspace.project_id, json.dumps(asset.to_wire())],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    second = json.loads(done.stdout)
    assert second["cached"] is True
    assert second["segments"] == first["segments"] and second["text"] == first["text"]


@pytest.mark.slow
def test_a_range_transcribes_only_that_range(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]]
) -> None:
    spans = speech_file[1]
    start_ms, end_ms = spans[1][0] - 250, spans[1][1] + 250
    workspace = new_workspace(tmp_path / "data")
    workspace.add(speech_file[0])
    result = run_transcribe_tool({"startMs": start_ms, "endMs": end_ms}, workspace.env())
    assert result["startMs"] == start_ms and result["endMs"] == end_ms
    assert word_error_rate(spans[1][2], result["text"]) < 0.15
    for segment in result["segments"]:
        assert start_ms <= segment["startMs"] <= segment["endMs"] <= end_ms


@pytest.mark.slow
def test_a_range_of_a_transcribed_asset_comes_from_the_full_transcript(
    transcribed: tuple[Workspace, MediaAsset, dict[str, Any]],
) -> None:
    workspace, _, full = transcribed
    second = full["segments"][1]
    result = run_transcribe_tool({"startMs": second["startMs"], "endMs": second["endMs"]}, workspace.env())
    assert result["cached"] is True and result["segments"] == [second]


@pytest.mark.slow
def test_the_page_sees_the_full_transcript(transcribed: tuple[Workspace, MediaAsset, dict[str, Any]]) -> None:
    workspace, asset, result = transcribed
    transcript = saved_transcript(workspace.storage, asset.id)
    assert transcript is not None and transcript.is_full
    assert [s.model_dump(by_alias=True, exclude={"words"}, exclude_none=True) for s in transcript.segments] == (
        result["segments"]
    )


def test_an_asset_never_transcribed_has_no_transcript(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "data")
    asset = workspace.add(silent_mp4(tmp_path / "silent.mp4"))
    assert saved_transcript(workspace.storage, asset.id) is None


@pytest.mark.slow
def test_the_registered_plugin_runs_the_tool(transcribed: tuple[Workspace, MediaAsset, dict[str, Any]]) -> None:
    workspace, asset, result = transcribed
    tool = build_tool_registry(load_settings().enabled_tools).get("transcribe_video")
    assert tool is not None
    assert [p.key for p in tool.parameters] == ["assetId", "language", "startMs", "endMs", "words"]
    again = tool.execute(parse_tool_args(tool, {"assetId": asset.id}), workspace.env())
    assert again["cached"] is True and again["text"] == result["text"]


# --- asset resolution and bad input -------------------------------------------------------------


@pytest.fixture
def two_assets(tmp_path: Path) -> Workspace:
    workspace = new_workspace(tmp_path / "data")
    workspace.add(silent_mp4(tmp_path / "a.mp4"), "Intro.mp4")
    workspace.add(silent_mp4(tmp_path / "b.mp4"), "Outro.mp4")
    return workspace


def test_an_ambiguous_call_lists_the_assets(two_assets: Workspace) -> None:
    with pytest.raises(TranscriptionError) as caught:
        run_transcribe_tool({}, two_assets.env())
    message = str(caught.value)
    assert "assetId" in message
    for asset in two_assets.assets:
        assert asset.id in message and asset.name in message


def test_the_active_asset_is_used_when_none_is_named(two_assets: Workspace) -> None:
    active = two_assets.assets[1]
    with pytest.raises(TranscriptionError, match="no audio stream") as caught:
        run_transcribe_tool({}, two_assets.env(active=active.id))
    assert "Outro.mp4" in str(caught.value) and active.id not in str(caught.value)  # by name, no internal id


def test_an_unknown_asset_id_is_an_error_listing_the_assets(two_assets: Workspace) -> None:
    with pytest.raises(TranscriptionError, match="No media asset has id 'nope'") as caught:
        run_transcribe_tool({"assetId": "nope"}, two_assets.env())
    assert all(asset.id in str(caught.value) for asset in two_assets.assets)


def test_no_assets_at_all_says_to_upload(tmp_path: Path) -> None:
    with pytest.raises(TranscriptionError, match="upload"):
        run_transcribe_tool({}, new_workspace(tmp_path / "data").env())


def test_missing_media_file_names_the_asset(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "data")
    asset = workspace.add(silent_mp4(tmp_path / "gone.mp4"), "Gone.mp4")
    path = stored_path(workspace.storage, asset.id)
    assert path is not None
    path.unlink()
    with pytest.raises(TranscriptionError, match="missing") as caught:
        run_transcribe_tool({}, workspace.env())
    assert "Gone.mp4" in str(caught.value)


def test_no_audio_stream_names_the_asset(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "data")
    workspace.add(silent_mp4(tmp_path / "silent.mp4"), "Screen.mp4")
    with pytest.raises(TranscriptionError, match=r"'Screen\.mp4'.*no audio stream"):
        run_transcribe_tool({}, workspace.env())


@pytest.mark.parametrize("damage", ["truncate", "garbage", "truncate_indexed_first"])
def test_a_corrupt_file_is_a_clear_error(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]], damage: str
) -> None:
    """The stored file is damaged after import (disk error, interrupted copy): an error, not a crash.
    With the index first (faststart) the file still opens and the damage shows mid-transcription."""
    workspace = new_workspace(tmp_path / "data")
    media = speech_file[0]
    if damage == "truncate_indexed_first":
        media = tmp_path / "fast.mp4"
        speech_mp4(media, faststart=True)
        damage = "truncate"
    asset = workspace.add(media, "Broken.mp4")
    path = stored_path(workspace.storage, asset.id)
    assert path is not None
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"not a video at all" * 100)
    with pytest.raises(TranscriptionError, match=r"'Broken\.mp4'.*(damaged|incomplete|not a readable)"):
        run_transcribe_tool({}, workspace.env())


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"startMs": -5}, r"argument 'startMs': Input should be greater than or equal to 0 \(got -5\)"),
        ({"endMs": "soon"}, "argument 'endMs' must be a number, got string 'soon'"),
        ({"startMs": 5000, "endMs": 1000}, r"endMs \(1000\) must be greater than startMs \(5000\)"),
        ({"language": 7}, "argument 'language' must be a string, got integer 7"),
        ({"language": "Klingon!"}, "argument 'language': 'Klingon!' is not a language code"),
        ({"assetId": 12}, "argument 'assetId' must be a string, got integer 12"),
    ],
)
def test_bad_arguments_are_clear_errors(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]], args: dict[str, Any], expected: str
) -> None:
    workspace = new_workspace(tmp_path / "data")
    workspace.add(speech_file[0])
    with pytest.raises(ToolArgumentsError, match=expected):
        run_transcribe_tool(args, workspace.env())


def test_a_start_past_the_end_is_an_error(tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]]) -> None:
    workspace = new_workspace(tmp_path / "data")
    workspace.add(speech_file[0], "Talk.mp4")
    with pytest.raises(TranscriptionError, match=r"past the end of 'Talk\.mp4'"):
        run_transcribe_tool({"startMs": 3_600_000}, workspace.env())


def test_the_moonshine_backend_says_it_only_knows_english(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "moonshine")
    workspace = new_workspace(tmp_path / "data")
    workspace.add(speech_file[0])
    with pytest.raises(TranscriptionError, match=r"only understands English.*TRANSCRIBE_BACKEND"):
        run_transcribe_tool({"language": "de"}, workspace.env())


# --- the bounded result -------------------------------------------------------------------------


def long_transcript(count: int) -> Transcript:
    segments = [
        TranscriptSegment(start_ms=i * 4000, end_ms=i * 4000 + 3500, text=f"Sentence number {i} of a long talk.")
        for i in range(count)
    ]
    return Transcript(duration_ms=count * 4000, language="en", segments=segments, backend="local", model="m")


def test_a_long_transcript_is_bounded_with_a_note_on_how_to_read_on() -> None:
    asset = MediaAsset(id="a1", name="Long.mp4")
    result = tool_result(asset, long_transcript(2000), cached=False, budget=3000)
    assert result["truncated"] is True
    assert len(result["text"]) <= 3000 + 200
    assert len(result["segments"]) <= MAX_RESULT_SEGMENTS
    resume = int(result["note"].split("startMs=")[1].split(" ")[0].rstrip("."))
    assert resume == result["segments"][-1]["endMs"] + 500  # the next merged segment's start
    starts = [s["startMs"] for s in result["segments"]]
    assert starts == sorted(starts)


def test_a_short_transcript_is_returned_whole() -> None:
    result = tool_result(MediaAsset(id="a1", name="Short.mp4"), long_transcript(5), cached=True)
    assert "truncated" not in result and len(result["segments"]) == 5 and result["cached"] is True
    assert result["text"].startswith("Sentence number 0")


class CrashingBackend:
    """A backend whose engine breaks in an unforeseen way (as a native library or a new SDK might)."""

    name = "crashing"
    model = "none"

    def transcribe(self, audio: AudioInput, language: str | None, on_progress: Callable[[float], None]) -> Any:
        raise RuntimeError("native failure\n  in   module")


def test_an_unforeseen_backend_failure_is_a_readable_error(
    tmp_path: Path, speech_file: tuple[Path, list[tuple[int, int, str]]]
) -> None:
    workspace = new_workspace(tmp_path / "data")
    asset = workspace.add(speech_file[0], "Talk.mp4")
    with pytest.raises(TranscriptionError) as caught:
        transcribe_asset(workspace.env(), asset, backend=CrashingBackend())
    assert str(caught.value) == (
        "Cannot transcribe 'Talk.mp4': the crashing transcriber failed (native failure in module)"
    )
