"""Storage for the creator's page, on both backends: pages of assets filtered by name, a conversation's branch
replaced, conversations found by what was said, renamed and deleted."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_app.runs.models import TurnChangedError
from agent_app.storage import NotFoundError, Storage
from agent_app.types import ChatMessage, ToolCall, ToolResult, now_ms
from agent_app.ui.markdown_text import typed_markdown
from tests.media_samples import make_wav
from tests.storage_backends import BACKENDS, Backend, backend_for


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen = backend_for(request, request.param, tmp_path / "data")
    yield chosen
    chosen.close_all()


def test_assets_come_newest_first_a_page_at_a_time_filtered_literally(storage: Storage, tmp_path: Path) -> None:
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


def test_a_branch_of_a_conversation_is_replaced_in_storage(storage: Storage) -> None:
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


def said(storage: Storage, project_id: str, title: str, *lines: tuple[str, str]) -> str:
    chat = storage.create_conversation(project_id, title)
    for role, content in lines:
        storage.append_message(chat.id, ChatMessage(role=role, content=content))
    return chat.id


def test_conversations_are_found_by_every_word_said_in_any_case_and_accent(storage: Storage) -> None:
    project = storage.create_project("p")
    other = storage.create_project("other")
    storm = said(storage, project.id, "", ("user", "Where is the Café scene?"), ("assistant", "At 2:10, the STORM."))
    harbour = said(storage, project.id, "Harbour", ("user", "boats at dawn"))
    said(storage, other.id, "", ("user", "the café storm elsewhere"))
    tool_only = storage.create_conversation(project.id)
    call = ToolCall(id="c1", name="transcribe_video", args={"assetId": "storm"})
    storage.append_message(tool_only.id, ChatMessage(role="assistant", content="", tool_calls=[call]))
    result = ToolResult(tool_call_id="c1", name="transcribe_video", result={"text": "storm"})
    storage.append_message(tool_only.id, ChatMessage(role="tool", content="storm", tool_result=result))

    def found(*words: str, limit: int = 10) -> list[str]:
        return [c.id for c in storage.search_conversations(project.id, list(words), limit=limit)]

    assert found("cafe", "storm") == [storm]  # accents and case folded, words from two messages
    assert found("harbour") == [harbour]  # the title counts
    assert found("storm", "harbour") == []
    assert found("toolcalls") == [] and found("assetid") == []  # the JSON around what was said is not searched
    assert found("%") == [] and found("_") == []  # matched literally
    assert found() == [tool_only.id, harbour, storm]  # no words: all of the project's, latest activity first
    assert found(limit=1) == [tool_only.id]


def test_conversations_list_newest_activity_first_and_are_renamed_and_deleted(storage: Storage) -> None:
    project = storage.create_project("p")
    first = said(storage, project.id, "", ("user", "first question, long enough to be a title of its own"))
    second = said(storage, project.id, "", ("user", "second"))
    storage.append_message(first, ChatMessage(role="assistant", content="answer"))  # first is active again
    assert [c.id for c in storage.list_conversations(project.id)] == [first, second]
    assert [c.id for c in storage.list_conversations(project.id, limit=1)] == [first]
    listed = storage.get_conversation(first)
    assert listed is not None and listed.message_count == 2 and listed.question_count == 1
    assert listed.title == "first question, long enough to be a title of its own"
    renamed = storage.rename_conversation(second, "  Storm\u200b notes ")
    assert renamed.title == "Storm notes" and storage.search_conversations(project.id, ["notes"], limit=5) == [renamed]
    with pytest.raises(NotFoundError):
        storage.rename_conversation("missing", "x")
    storage.delete_conversation(first)
    assert storage.get_conversation(first) is None and storage.load_messages(first) == []
    assert storage.count_messages(first) == 0
    with pytest.raises(NotFoundError):
        storage.delete_conversation(first)
    assert [c.id for c in storage.list_conversations(project.id)] == [second]


def test_the_users_text_is_shown_as_typed() -> None:
    from markdown_it import MarkdownIt

    typed = "# Not a heading\nprice $5 and $x$\n    indented\n1. one\n\n> no quote :smile:"
    html = MarkdownIt("commonmark").render(typed_markdown(typed))
    assert "<h1>" not in html and "<ol>" not in html and "<blockquote>" not in html and "<code>" not in html
    assert html.count("<br />") == 3  # each line break kept
    assert "# Not a heading" in html and "$x$" in html and "\u00a0" * 4 + "indented" in html
