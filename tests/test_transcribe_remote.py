"""The ``openai`` and ``gemini`` backends: the real SDKs against the fake LLM server's wire formats
(multipart upload to ``/v1/audio/transcriptions``; ``generateContent`` with inline audio and a schema)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agent_app.media import TranscriptionError
from agent_app.media.backends.base import BackendRequestError, BackendUnavailableError, TranscribeSettings
from agent_app.media.backends.config import create_backend, read_transcribe_settings
from agent_app.media.backends.gemini_api import GeminiTranscriptionBackend
from agent_app.media.backends.openai_api import OpenAITranscriptionBackend
from agent_app.settings import load_settings
from fake_llm import (
    FakeLLMServer,
    RecordedRequest,
    Reply,
    error_reply,
    gemini_text,
    transcription_reply,
)
from tests.transcribe_support import Workspace, new_workspace, run_transcribe_tool
from testsupport.decoded_audio import extract_audio
from testsupport.media_factory import tone_track, write_mp4

pytestmark = pytest.mark.usefixtures("offline_transcription")

SECRET = "sk-test-secret-value"


@pytest.fixture(scope="module")
def tone_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mp4(tmp_path_factory.mktemp("remote") / "tone.mp4", tone_track(4000, 1000))


@pytest.fixture
def workspace(tmp_path: Path, tone_video: Path) -> Workspace:
    space = new_workspace(tmp_path / "data")
    space.add(tone_video, "Tone.mp4")
    return space


def use_settings(monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    """Set these settings (as environment variables) for this test only."""
    for name, value in settings.items():
        monkeypatch.setenv(name, value)


def use_openai(monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer, model: str) -> None:
    """The ``openai`` backend pointed at the fake server with its own ``TRANSCRIBE_*`` settings."""
    use_settings(monkeypatch, TRANSCRIBE_BACKEND="openai", TRANSCRIBE_API_KEY=SECRET,
                 TRANSCRIBE_BASE_URL=fake_llm.openai_base_url, TRANSCRIBE_MODEL=model)  # fmt: skip


def uploaded_duration_ms(data: bytes, tmp_path: Path) -> int:
    """Decode an uploaded chunk back, to prove it is real compressed audio of the right length."""
    path = tmp_path / "upload.ogg"
    path.write_bytes(data)
    return extract_audio(path).duration_ms


# --- openai -------------------------------------------------------------------------------------


def test_openai_backend_uploads_compressed_audio_and_maps_verbose_segments(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_openai(monkeypatch, fake_llm, "whisper-large-v3")
    fake_llm.transcription.push(
        transcription_reply(
            "Hello there. General Kenobi.", segments=[(0.9, 1.5, " Hello there."), (2.0, 3.2, " General Kenobi.")]
        )
    )
    result = run_transcribe_tool({}, workspace.env())

    request = fake_llm.transcription.last
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.form["model"] == "whisper-large-v3"
    assert request.form["response_format"] == "verbose_json"
    assert request.form["timestamp_granularities[]"] == "segment"
    assert "language" not in request.form
    upload = request.files["file"]
    assert upload.content_type == "audio/ogg" and upload.data[:4] == b"OggS"
    assert uploaded_duration_ms(upload.data, tmp_path) == pytest.approx(4000, abs=60)

    assert result["language"] == "en" and result["backend"] == "openai"
    assert result["segments"] == [
        {"startMs": 900, "endMs": 1500, "text": "Hello there."},
        {"startMs": 2000, "endMs": 3200, "text": "General Kenobi."},
    ]
    assert result["text"] == "Hello there. General Kenobi."


def test_openai_backend_uses_the_llm_settings_of_an_openai_compatible_provider(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_settings(monkeypatch, TRANSCRIBE_BACKEND="openai", TRANSCRIBE_MODEL="Systran/faster-whisper-small",
                 LLM_PROVIDER="openai-compatible", LLM_API_KEY=SECRET,
                 LLM_BASE_URL=fake_llm.openai_base_url)  # fmt: skip
    fake_llm.transcription.push(transcription_reply("Hi.", segments=[(0.5, 1.0, "Hi.")]))
    result = run_transcribe_tool({"language": "EN"}, workspace.env())
    request = fake_llm.transcription.last
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.form["language"] == "en"
    assert result["segments"] == [{"startMs": 500, "endMs": 1000, "text": "Hi."}]


def test_openai_json_only_model_gives_one_segment_per_chunk(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_openai(monkeypatch, fake_llm, "gpt-4o-mini-transcribe")
    fake_llm.transcription.push(transcription_reply("A beep."))
    result = run_transcribe_tool({}, workspace.env())
    assert fake_llm.transcription.last.form["response_format"] == "json"
    assert len(result["segments"]) == 1 and result["segments"][0]["text"] == "A beep."
    assert result["segments"][0]["startMs"] == 0 and result["segments"][0]["endMs"] == pytest.approx(4000, abs=60)


def test_openai_server_refusing_verbose_json_falls_back_to_json(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_openai(monkeypatch, fake_llm, "some-model")
    fake_llm.transcription.push(
        error_reply(400, "response_format 'verbose_json' is not compatible with this model"), transcription_reply("Ok.")
    )
    result = run_transcribe_tool({}, workspace.env())
    assert [r.form["response_format"] for r in fake_llm.transcription.requests] == ["verbose_json", "json"]
    assert result["text"] == "Ok."


def test_openai_long_audio_is_split_into_chunks_on_the_media_timeline(
    fake_llm: FakeLLMServer, tone_video: Path
) -> None:
    """Each chunk's segment times are relative to the chunk; the backend shifts them onto the media."""

    def per_chunk(request: RecordedRequest) -> Reply:
        return transcription_reply(f"chunk {len(fake_llm.transcription.requests)}", segments=[(0.1, 0.4, "x")])

    fake_llm.transcription.default = per_chunk
    backend = OpenAITranscriptionBackend(
        TranscribeSettings("openai", model="whisper-1", api_key=SECRET, base_url=fake_llm.openai_base_url),
        chunk_seconds=1.5,
    )
    clip = extract_audio(tone_video)
    result = backend.transcribe(clip, None, lambda fraction: None)
    uploads = fake_llm.transcription.requests
    assert len(uploads) == len(result.segments) >= 3
    starts = [s.start_ms for s in result.segments]
    assert starts[0] == 100 and starts == sorted(starts)
    assert all(s.end_ms - s.start_ms == 300 for s in result.segments)
    assert all(len(r.files["file"].data) < 25 * 1024 * 1024 for r in uploads)


def test_openai_rejected_key_names_the_setting_never_the_value(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_openai(monkeypatch, fake_llm, "whisper-1")
    fake_llm.transcription.push(error_reply(401, "Incorrect API key provided"))
    with pytest.raises(TranscriptionError, match="rejected the API key") as caught:
        run_transcribe_tool({}, workspace.env())
    assert "TRANSCRIBE_API_KEY" in str(caught.value) and SECRET not in str(caught.value)
    assert "Tone.mp4" in str(caught.value)


# --- gemini -------------------------------------------------------------------------------------


def gemini_answer(segments: list[dict[str, Any]], language: str = "en") -> Reply:
    return gemini_text(json.dumps({"language": language, "segments": segments}))


def test_gemini_backend_sends_audio_inline_with_a_response_schema(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_settings(monkeypatch, TRANSCRIBE_BACKEND="gemini", TRANSCRIBE_API_KEY=SECRET,
                 TRANSCRIBE_MODEL="gemini-2.5-flash", TRANSCRIBE_BASE_URL=fake_llm.gemini_base_url)  # fmt: skip
    fake_llm.gemini.push(
        gemini_answer(
            [
                {"startSeconds": 0.95, "endSeconds": 1.4, "text": "Beep."},
                {"startSeconds": 2.0, "endSeconds": 99.0, "text": "Silence after."},
            ]
        )
    )
    result = run_transcribe_tool({}, workspace.env())

    request = fake_llm.gemini.last
    assert request.model == "gemini-2.5-flash"
    assert request.headers["x-goog-api-key"] == SECRET
    body = request.json
    parts = body["contents"][0]["parts"]
    inline = next(p["inlineData"] for p in parts if "inlineData" in p)
    # The SDK writes this field in snake case; the API's JSON parser accepts both spellings.
    assert (inline.get("mimeType") or inline.get("mime_type")) == "audio/ogg"
    encoded = inline["data"]  # the SDK sends URL-safe base64, possibly unpadded
    audio = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    assert audio[:4] == b"OggS" and uploaded_duration_ms(audio, tmp_path) == pytest.approx(4000, abs=60)
    assert any("Transcribe" in p.get("text", "") for p in parts)
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config.get("responseSchema") or config.get("responseJsonSchema")
    assert schema is not None and "segments" in json.dumps(schema) and "startSeconds" in json.dumps(schema)

    assert result["backend"] == "gemini" and result["language"] == "en"
    assert result["segments"][0] == {"startMs": 950, "endMs": 1400, "text": "Beep."}
    assert result["segments"][1]["endMs"] <= result["durationMs"]  # a time past the end is clamped


def test_gemini_backend_uses_the_llm_settings_of_a_gemini_provider(
    fake_llm: FakeLLMServer, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_settings(monkeypatch, TRANSCRIBE_BACKEND="gemini", LLM_PROVIDER="gemini", LLM_MODEL="gemini-from-llm",
                 LLM_API_KEY=SECRET, LLM_BASE_URL="http://127.0.0.1:9/ignored-for-gemini",
                 GOOGLE_GEMINI_BASE_URL=fake_llm.gemini_base_url)  # fmt: skip
    fake_llm.gemini.push(gemini_answer([{"startSeconds": 1.0, "endSeconds": 1.4, "text": "Beep."}]))
    result = run_transcribe_tool({}, workspace.env())
    assert fake_llm.gemini.last.model == "gemini-from-llm"
    assert fake_llm.gemini.last.headers["x-goog-api-key"] == SECRET
    assert result["text"] == "Beep."


def test_gemini_busy_service_is_retried(fake_llm: FakeLLMServer, tone_video: Path) -> None:
    fake_llm.gemini.push(error_reply(503, "overloaded"), error_reply(429, "slow down"),
                         gemini_answer([{"startSeconds": 1.0, "endSeconds": 1.4, "text": "Beep."}]))  # fmt: skip
    backend = GeminiTranscriptionBackend(
        TranscribeSettings("gemini", model="gemini-2.5-flash", api_key=SECRET, base_url=fake_llm.gemini_base_url),
        retry_delay_s=0.01,
    )
    result = backend.transcribe(extract_audio(tone_video), None, lambda fraction: None)
    assert len(fake_llm.gemini.requests) == 3 and [s.text for s in result.segments] == ["Beep."]


def test_openai_busy_service_is_retried(fake_llm: FakeLLMServer, workspace: Workspace,
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    use_openai(monkeypatch, fake_llm, "whisper-1")
    fake_llm.transcription.push(error_reply(503, "busy", retry_after_ms=1), transcription_reply("Ok."))
    assert run_transcribe_tool({}, workspace.env())["text"] == "Ok."
    assert len(fake_llm.transcription.requests) == 2


def test_gemini_answer_that_is_not_a_transcript_is_a_clear_error(fake_llm: FakeLLMServer, tone_video: Path) -> None:
    fake_llm.gemini.push(gemini_text("Sure! Here is the transcript: beep"))
    backend = GeminiTranscriptionBackend(
        TranscribeSettings("gemini", model="gemini-2.5-flash", api_key=SECRET, base_url=fake_llm.gemini_base_url)
    )
    with pytest.raises(BackendRequestError, match="not a transcript"):
        backend.transcribe(extract_audio(tone_video), None, lambda fraction: None)


def test_gemini_unknown_model_names_the_setting(fake_llm: FakeLLMServer, tone_video: Path) -> None:
    fake_llm.gemini.push(error_reply(404, "models/nope is not found"))
    backend = GeminiTranscriptionBackend(
        TranscribeSettings("gemini", model="nope", api_key=SECRET, base_url=fake_llm.gemini_base_url)
    )
    with pytest.raises(BackendRequestError, match=r"model 'nope' \(TRANSCRIBE_MODEL\)"):
        backend.transcribe(extract_audio(tone_video), None, lambda fraction: None)


# --- configuration ------------------------------------------------------------------------------


def test_local_is_the_default_backend() -> None:
    settings = read_transcribe_settings(load_settings())
    assert settings.backend == "local" and create_backend(settings).name == "local"


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"TRANSCRIBE_BACKEND": "openai"}, ["TRANSCRIBE_API_KEY"]),
        ({"TRANSCRIBE_BACKEND": "openai", "TRANSCRIBE_BASE_URL": "http://127.0.0.1:9/v1"},
         ["TRANSCRIBE_API_KEY", "TRANSCRIBE_MODEL"]),
        ({"TRANSCRIBE_BACKEND": "gemini", "TRANSCRIBE_API_KEY": SECRET}, ["TRANSCRIBE_MODEL"]),
        ({"TRANSCRIBE_BACKEND": "gemini", "LLM_PROVIDER": "openai-compatible", "LLM_API_KEY": SECRET,
          "LLM_MODEL": "gpt-4o"}, ["TRANSCRIBE_API_KEY", "TRANSCRIBE_MODEL"]),
    ],
)  # fmt: skip
def test_an_unusable_backend_says_what_is_missing(
    env: dict[str, str], missing: list[str], monkeypatch: pytest.MonkeyPatch, workspace: Workspace
) -> None:
    use_settings(monkeypatch, **env)
    with pytest.raises(TranscriptionError) as caught:
        run_transcribe_tool({}, workspace.env())
    message = str(caught.value)
    assert all(name in message for name in missing) and SECRET not in message


def test_an_unknown_backend_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "whisper.cpp")
    with pytest.raises(
        BackendUnavailableError, match="TRANSCRIBE_BACKEND must be one of local, moonshine, openai, gemini"
    ):
        read_transcribe_settings(load_settings())
