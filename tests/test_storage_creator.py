"""Storage for the creator's page: pages of assets filtered by name, a conversation's branch replaced."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent_app.runs.models import TurnChangedError
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, now_ms
from agent_app.ui.markdown_text import typed_markdown
from tests.media_samples import make_wav


def test_assets_come_newest_first_a_page_at_a_time_filtered_literally(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "data")
    project = storage.create_project("p")
    wav = make_wav(tmp_path / "t.wav", seconds=0.1).read_bytes()
    names = ["a.wav", "50% mix.wav", "b_1.wav", "B-roll.wav", "c.wav"]
    ids = [storage.import_asset(project.id, name, io.BytesIO(wav)).id for name in names]
    assert [a.id for a in storage.find_assets(project.id, limit=2)] == [ids[4], ids[3]]
    assert [a.id for a in storage.find_assets(project.id, limit=2, offset=2)] == [ids[2], ids[1]]
    assert [a.name for a in storage.find_assets(project.id, name_contains="b", limit=9)] == ["B-roll.wav", "b_1.wav"]
    assert [a.name for a in storage.find_assets(project.id, name_contains="%", limit=9)] == ["50% mix.wav"]
    assert [a.name for a in storage.find_assets(project.id, name_contains="b_", limit=9)] == ["b_1.wav"]
    assert storage.count_assets(project.id) == 5 and storage.count_assets(project.id, name_contains="_") == 1


def test_a_branch_of_a_conversation_is_replaced_in_storage(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "data")
    project = storage.create_project("p")
    chat = storage.create_conversation(project.id)
    messages = [ChatMessage(role=r, content=c) for r, c in (("user", "Q1"), ("assistant", "A1"), ("user", "Q2"))]
    messages.append(ChatMessage(role="assistant", content="A2"))
    for message in messages:
        storage.append_message(chat.id, message)
    runs = storage.run_store()
    edited = ChatMessage(role="user", content="Q2, edited")
    run = runs.create_run(
        chat.id, None, [edited], owner="a", lease_until=now_ms() + 60_000, replace_from=messages[2].id
    )
    assert [m.content for m in storage.load_messages(chat.id)] == ["Q1", "A1", "Q2, edited"]
    runs.finish_run(run.id, "answered")
    with pytest.raises(TurnChangedError):
        runs.create_run(chat.id, None, [], owner="a", lease_until=now_ms() + 60_000, replace_from=messages[3].id)


def test_the_users_text_is_shown_as_typed() -> None:
    from markdown_it import MarkdownIt

    typed = "# Not a heading\nprice $5 and $x$\n    indented\n1. one\n\n> no quote :smile:"
    html = MarkdownIt("commonmark").render(typed_markdown(typed))
    assert "<h1>" not in html and "<ol>" not in html and "<blockquote>" not in html and "<code>" not in html
    assert html.count("<br />") == 3  # each line break kept
    assert "# Not a heading" in html and "$x$" in html and "\u00a0" * 4 + "indented" in html
