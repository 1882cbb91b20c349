"""The whole path on the real page (AppTest): a video of synthesized speech is uploaded, the fake LLM
asks for ``transcribe_video``, the offline backend transcribes it, and the transcript reaches the model
in the next request; the transcript panel then offers the downloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm import FakeLLMServer, openai_text, openai_tool_calls, tool_call
from tests.page_support import bubbles, configure_env, new_page, send
from tests.transcribe_support import SETTINGS
from tests.transcript_page_support import page_indexes
from testsupport.media_factory import speech_mp4


@pytest.mark.slow
def test_uploaded_video_is_transcribed_offline_and_the_transcript_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    configure_env(monkeypatch, tmp_path / "data", fake_llm)  # the assistant talks to the fake server
    video = tmp_path / "talk.mp4"
    speech_mp4(video)

    at = new_page()
    at.sidebar.file_uploader[0].upload("Talk.mp4", video.read_bytes(), "video/mp4").run()
    assert not at.exception
    asset_id = str(at.session_state["ws.active_asset_id"])
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {}, id="call_t")),
        openai_text("They talk about a fox, a book and a camera."),
    )
    send(at, "What is said in my video?")

    tool_message = fake_llm.chat.last.json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_t"
    payload = json.loads(tool_message["content"])["result"]
    assert payload["assetId"] == asset_id and payload["language"] == "en"
    assert "quick brown fox" in payload["text"].lower() and "camera" in payload["text"].lower()
    assert payload["segments"][0]["startMs"] < payload["segments"][-1]["startMs"] <= payload["durationMs"]
    assert "fox, a book and a camera" in bubbles(at)[-1][1]

    at.run()  # the panel reads the transcript the tool just cached
    assert [b.label for b in at.main.download_button] == ["SRT", "WebVTT", "Words", "Text", "JSON"]
    assert page_indexes(at)[0] == 0
