"""Messages as a creator expects them (AppTest): the user's own text as typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_llm import FakeLLMServer, openai_text
from tests.page_support import bubbles, configure_env, new_page, send


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer) -> Path:
    directory = tmp_path / "data"
    configure_env(monkeypatch, directory, fake_llm)
    return directory


def test_the_users_message_keeps_its_lines_and_is_not_rendered(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("# A heading from the model\n\nand $x$ rendered"))
    typed = "# Scenes to check\nIntro at $5 budget\n  - shot list"
    at = send(new_page(), typed)
    user, answer = bubbles(at)
    raw = str(at.main.chat_message[0].markdown[0].value)
    assert raw.split("  \n") == ["\\# Scenes to check", "Intro at \\$5 budget", "\u00a0\u00a0\\- shot list"]
    assert user[1].replace("  \n", "\n").replace("\u00a0", " ") == typed  # what the reader sees: as typed
    assert answer[1].startswith("# A heading from the model")  # the assistant's Markdown stays Markdown
    assert fake_llm.chat.last.json["messages"][-1]["content"] == typed  # the model gets it unchanged
