"""The sidebar's conversations with AppTest: short titles, counts of questions, times on the browser's clock,
search by words said, rename, delete after asking, and Markdown/JSON exports with the tool calls."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from streamlit.testing.v1 import AppTest

from agent_app.storage import SqliteStorage
from agent_app.storage.names import title_from
from agent_app.types import ChatMessage, ToolCall, ToolResult
from agent_app.ui.conversation_export import export_file_stem, to_json, to_markdown
from agent_app.ui.conversation_list import conversation_label
from fake_llm import FakeLLMServer, openai_text, streamed
from fake_llm.streams import StreamScript
from tests.page_support import bubbles, data_dir, new_page, send, settle
from tests.run_support import wait_until

__all__ = ["data_dir"]  # a fixture (tests.page_support)


def seeded(data_dir: Path, chats: dict[str, list[ChatMessage]]) -> tuple[str, dict[str, str]]:
    """A project with one stored conversation per title: (project id, title -> conversation id)."""
    storage = SqliteStorage(data_dir)
    project = storage.create_project("Harbour")
    ids = {}
    for title, messages in chats.items():
        conversation = storage.create_conversation(project.id, title)
        for message in messages:
            storage.append_message(conversation.id, message)
        ids[title] = conversation.id
    storage.close()
    return project.id, ids


MANAGE_KEY = "conversations_manage"


def open_manage(at: AppTest) -> None:
    """Show the open conversation's rename, export and delete (its sidebar button)."""
    manage = at.sidebar.button(key=MANAGE_KEY)
    assert manage.label == "Rename, export or delete this chat" and manage.proto.type == "tertiary"
    manage.click().run()


def tool_turn(question: str, answer: str) -> list[ChatMessage]:
    """A question answered after one tool call: four messages, one question."""
    call = ToolCall(id="call_1", name="transcribe_video", args={"assetId": "a1"})
    result = ToolResult(tool_call_id="call_1", name="transcribe_video", result={"text": "hello"}, duration_ms=11)
    return [
        ChatMessage(role="user", content=question),
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", content="transcribe_video finished", tool_result=result),
        ChatMessage(role="assistant", content=answer),
    ]


def test_a_new_conversation_gets_a_short_title_from_the_first_question() -> None:
    assert title_from("  What is said\nin the clip?  ") == "What is said"  # the first line
    long = "Please find every moment where the harbour master talks about the storm of 1987 and the boats"
    title = title_from(long)
    assert title.endswith("…") and len(title) <= 60 and long.startswith(title[:-1])
    assert title[:-1] == title[:-1].rstrip() and " " + title[:-1].split()[-1] + " " in " " + long + " "  # whole words


def test_counts_are_questions_and_times_are_on_the_browser_clock(data_dir: Path) -> None:
    _, ids = seeded(data_dir, {"Storm": tool_turn("What about the storm?", "It was loud.")})
    conversation = SqliteStorage(data_dir).get_conversation(ids["Storm"])
    assert conversation is not None and conversation.question_count == 1 and conversation.message_count == 4
    when = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
    conversation = conversation.model_copy(update={"updated_at": int(when.timestamp() * 1000)})
    assert conversation_label(conversation, ZoneInfo("Asia/Tokyo"), "") == "Storm — 1 question · 1 Dec 2026, 08:30"
    assert conversation_label(conversation, UTC, " UTC").endswith("· 30 Nov 2026, 23:30 UTC")


def test_the_sidebar_lists_conversations_and_opens_one(data_dir: Path) -> None:
    project_id, ids = seeded(
        data_dir,
        {"Storm": tool_turn("What about the storm?", "It was loud."), "Boats": tool_turn("Which boats?", "Three.")},
    )
    at = new_page({"project": project_id, "chat": ids["Boats"]})
    label = at.sidebar.button(key=f"conversations_open_{ids['Storm']}").label
    assert label.startswith("Storm — 1 question · ") and label.endswith(" UTC")  # AppTest's browser has no zone
    opened = at.sidebar.button(key=f"conversations_open_{ids['Boats']}")
    assert opened.proto.type == "secondary" and not opened.disabled  # the open one is framed, not greyed
    at.sidebar.button(key=f"conversations_open_{ids['Storm']}").click().run()
    assert at.query_params["chat"] == ids["Storm"]
    assert bubbles(at)[0] == ("user", "What about the storm?")


def test_search_finds_conversations_by_words_in_their_messages(data_dir: Path) -> None:
    project_id, ids = seeded(
        data_dir,
        {
            "Storm": tool_turn("What about the storm?", "The lighthouse keeper was on the pier."),
            "Boats": tool_turn("Which boats?", "Three trawlers."),
            "Café": [ChatMessage(role="user", content="Where is the Café Hafen?")],
        },
    )
    at = new_page({"project": project_id})
    at.sidebar.text_input(key="conversations_search").set_value("LIGHTHOUSE pier").run()
    listed = [b.key for b in at.sidebar.button if str(b.key).startswith("conversations_open_")]
    assert listed == [f"conversations_open_{ids['Storm']}"]
    assert "1 conversation with those words" in [c.value for c in at.sidebar.caption]
    assert not at.sidebar.text_input and not at.main.children  # a search redraws the list alone
    at.run()  # the whole page again: AppTest keeps only what the last run drew
    at.sidebar.text_input(key="conversations_search").set_value("cafe").run()  # accents do not matter
    assert [b.key for b in at.sidebar.button if str(b.key).startswith("conversations_open_")] == [
        f"conversations_open_{ids['Café']}"
    ]
    at.run()
    at.sidebar.text_input(key="conversations_search").set_value("role").run()  # the JSON's keys are not words said
    assert not [b for b in at.sidebar.button if str(b.key).startswith("conversations_open_")]


def test_rename_and_delete_after_asking(data_dir: Path) -> None:
    project_id, ids = seeded(data_dir, {"Storm": tool_turn("What about the storm?", "Loud.")})
    at = new_page({"project": project_id, "chat": ids["Storm"]})
    assert not [w for w in at.sidebar.text_input if w.key == "conversations_rename"]  # drawn only when opened
    open_manage(at)
    at.sidebar.text_input(key="conversations_rename").set_value("Storm of 1987").run()
    at.sidebar.button(key="conversations_rename_button").click().run()
    storage = SqliteStorage(data_dir)
    assert storage.get_conversation(ids["Storm"]).title == "Storm of 1987"  # type: ignore[union-attr]
    assert at.sidebar.button(key=f"conversations_open_{ids['Storm']}").label.startswith("Storm of 1987 — ")

    at.sidebar.button(key="conversations_delete").click().run()
    assert storage.get_conversation(ids["Storm"]) is not None  # only asked so far
    assert "Delete “Storm of 1987”" in at.sidebar.warning[0].value
    at.sidebar.button(key="conversations_delete_no").click().run()
    assert not at.sidebar.warning and storage.get_conversation(ids["Storm"]) is not None
    at.sidebar.button(key="conversations_delete").click().run()
    at.sidebar.button(key="conversations_delete_yes").click().run()
    assert storage.get_conversation(ids["Storm"]) is None and storage.load_messages(ids["Storm"]) == []
    assert bubbles(at) == [] and "chat" not in at.query_params
    assert not [b for b in at.sidebar.button if b.key == MANAGE_KEY]  # nothing open: nothing to manage


def test_rename_export_and_delete_show_when_opened_and_hide_on_switching(data_dir: Path) -> None:
    project_id, ids = seeded(
        data_dir, {"Storm": tool_turn("What about the storm?", "Loud."), "Boats": tool_turn("Which boats?", "Three.")}
    )
    at = new_page({"project": project_id, "chat": ids["Storm"]})
    assert not at.sidebar.download_button and not [b for b in at.sidebar.button if b.key == "conversations_delete"]
    open_manage(at)
    assert [b.label for b in at.sidebar.download_button] == ["Markdown", "JSON"]
    at.sidebar.button(key="conversations_delete").click().run()
    assert "Delete “Storm”" in at.sidebar.warning[0].value
    at.sidebar.button(key=MANAGE_KEY).click().run()  # hidden again, and the question with it
    assert not at.sidebar.download_button and not at.sidebar.warning
    open_manage(at)
    assert not at.sidebar.warning and [b.label for b in at.sidebar.download_button] == ["Markdown", "JSON"]
    at.sidebar.button(key=f"conversations_open_{ids['Boats']}").click().run()
    assert bubbles(at)[0] == ("user", "Which boats?")
    assert not at.sidebar.download_button  # another conversation open: hidden
    assert not at.sidebar.text_input and not at.sidebar.subheader  # a switch draws the list, not its search box
    at.sidebar.button(key=f"conversations_open_{ids['Storm']}").click().run()
    assert not at.sidebar.download_button  # and still hidden on coming back


def test_exports_as_markdown_and_json_with_the_tool_calls() -> None:
    noon = int(datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp() * 1000)
    turns = [ChatMessage(role="user", content="# Not a heading\nline two $x$"), *tool_turn("Again?", "**Yes.**")]
    messages = [message.model_copy(update={"timestamp": noon}) for message in turns]
    markdown = to_markdown("Storm", messages, ZoneInfo("Europe/Berlin"))
    assert markdown.startswith("# Storm\n")
    assert "## You · 30 Nov 2026, 13:00\n\n\\# Not a heading  \nline two \\$x\\$\n" in markdown  # text, as typed
    assert "```" not in markdown
    assert '- Tool `transcribe_video` `{"assetId": "a1"}` — done in 11 ms' in markdown
    assert "**Yes.**" in markdown
    exported = json.loads(to_json(None, "Storm", messages))
    calls = [m for m in exported["messages"] if m.get("toolCalls")]
    assert calls[0]["toolCalls"][0] == {"id": "call_1", "name": "transcribe_video", "args": {"assetId": "a1"}}
    results = [m for m in exported["messages"] if m["role"] == "tool"]
    assert results[0]["toolResult"]["result"] == {"text": "hello"} and results[0]["toolResult"]["durationMs"] == 11
    assert export_file_stem('Storm: "1987"/../x') == "Storm 1987 .. x" and export_file_stem("///") == "conversation"


def test_the_open_conversation_offers_both_downloads(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("Hello back"))
    at = send(new_page(), "Hello there")
    open_manage(at)
    labels = [b.label for b in at.sidebar.download_button]
    assert labels == ["Markdown", "JSON"]
    assert [b.proto.deferred_file_id != "" for b in at.sidebar.download_button] == [True, True]  # written on click


def test_deleting_a_conversation_stops_its_run_and_nothing_is_written_to_it(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    """The model's stream is closed at once, and the answer streamed so far is not stored anywhere."""
    fake_llm.chat.push(streamed(openai_text("word " * 40), StreamScript(pieces=40, delay_seconds=0.25)))
    at = new_page()
    at.chat_input(key="chat_prompt").set_value("Ramble on").run()
    chat_id = at.query_params["chat"]
    wait_until(lambda: fake_llm.chat.requests and fake_llm.chat.last.events_sent >= 2, 10.0)
    open_manage(at)
    at.sidebar.button(key="conversations_delete").click().run()
    at.sidebar.button(key="conversations_delete_yes").click().run()
    request = fake_llm.chat.last
    assert request.answered.wait(5) and request.closed_by_client and request.events_sent < 40
    time.sleep(0.5)  # a run left going would try to write its stopped text now
    storage = SqliteStorage(data_dir)
    assert storage.get_conversation(chat_id) is None and storage.load_messages(chat_id) == []
    assert storage.list_conversations(storage.list_projects()[0].id) == []
    assert bubbles(at) == [] and "chat" not in at.query_params


def test_retry_after_a_tool_round_too_large_to_resend_gets_an_answer(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    """A turn left as a run ended on a model asking for 1,000 calls (every one answered, no answer after):
    Retry does not resend the round, so it is answered instead of failing again on the context window."""
    calls = [ToolCall(id=f"c{n}", name="transcribe_video", args={"assetId": f"a{n}"}) for n in range(1000)]
    results = [
        ChatMessage(
            role="tool",
            content="transcribe_video failed",
            tool_result=ToolResult(tool_call_id=call.id, name=call.name, error="Not run: at most 10 tool calls"),
        )
        for call in calls
    ]
    turn = [ChatMessage(role="user", content="Transcribe all"), ChatMessage(role="assistant", tool_calls=calls)]
    project_id, ids = seeded(data_dir, {"Big": [*turn, *results]})
    at = new_page({"project": project_id, "chat": ids["Big"]})
    at.run()
    fake_llm.chat.push(openai_text("One clip at a time, then."))
    at.button(key="chat_retry").click().run()
    settle(at)
    assert not [e for e in at.main.error if "too long" in str(e.value)]
    assert bubbles(at)[-1] == ("assistant", "One clip at a time, then.")
    sent = [(m["role"], m.get("content")) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [("user", "Transcribe all")]
