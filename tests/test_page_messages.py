"""Messages as a creator expects them (AppTest): the user's own text as typed."""

from __future__ import annotations

import html
from pathlib import Path

from agent_app.storage import SqliteStorage
from agent_app.ui.live_status import QUEUED_LABEL
from fake_llm import FakeLLMServer, delayed, error_reply, openai_text
from tests.history_html import buttons_in, parse, tags
from tests.page_support import (
    action_targets,
    bubbles,
    click,
    data_dir,
    history_action,
    message_elements,
    new_page,
    run_going,
    send,
    settle,
    statuses,
)

__all__ = ["data_dir"]  # a fixture (tests.page_support)


def test_the_users_message_keeps_its_lines_and_is_not_rendered(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("# A heading from the model\n\nand $x$ rendered"))
    typed = "# Scenes to check\nIntro at $5 budget\n  - shot list"
    at = send(new_page(), typed)
    user, answer = bubbles(at)
    assert user == ("user", typed)  # what the reader sees: as typed, every line and leading space
    drawn_user, drawn_answer = (str(bubble["html"]) for bubble in message_elements(at))
    [typed_paragraph] = [(tag, text) for tag, attrs, text in parse(drawn_user) if attrs.get("class") == "typed"]
    assert typed_paragraph == ("p", typed)  # one paragraph kept as typed (its line breaks shown by "typed")
    assert f'<p class="typed">{html.escape(typed)}</p>' in drawn_user  # escaped, nothing rendered
    assert not {"h1", "ul", "li", "em", "code"} & set(tags(drawn_user))
    assert "<h1>A heading from the model</h1>" in drawn_answer  # the assistant's Markdown is rendered
    assert answer[1].startswith("A heading from the model")
    assert fake_llm.chat.last.json["messages"][-1]["content"] == typed  # the model gets it unchanged


def stored(data_dir: Path, chat_id: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in SqliteStorage(data_dir).load_messages(chat_id)]


def test_edit_and_resend_replaces_the_last_turn_in_storage_too(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("First answer"), openai_text("Second answer"), openai_text("Answer to the edit"))
    at = send(new_page(), "First question")
    at = send(at, "Second question, with a typo")
    chat_id = at.query_params["chat"]
    questions = [m.id for m in SqliteStorage(data_dir).load_messages(chat_id) if m.role == "user"]
    assert action_targets(at, "edit") == [(questions[-1], True)]  # only the last question can be edited
    history_action(at, "edit", questions[0])  # a question the page did not offer to edit: nothing happens
    assert not at.main.text_area
    history_action(at, "edit", questions[-1])
    editor = next(t for t in at.main.text_area if str(t.key).startswith("chat_edit_"))
    assert editor.value == "Second question, with a typo"
    editor.set_value("Second question, fixed").run()
    settle(next(b for b in at.main.button if str(b.key).startswith("chat_edit_send_")).click().run())
    assert [text for _, text in bubbles(at)] == ["First question", "First answer", "Second question, fixed",
                                                 "Answer to the edit"]  # fmt: skip
    assert stored(data_dir, chat_id) == [
        ("user", "First question"), ("assistant", "First answer"),
        ("user", "Second question, fixed"), ("assistant", "Answer to the edit"),
    ]  # fmt: skip
    sent = [(m["role"], m.get("content")) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [("user", "First question"), ("assistant", "First answer"), ("user", "Second question, fixed")]


def test_regenerate_asks_the_last_question_again_and_replaces_the_answer(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.chat.push(openai_text("A dull answer"), openai_text("A better answer"))
    at = send(new_page(), "Describe the harbour")
    [(answer_id, enabled)] = action_targets(at, "regenerate")
    assert enabled and answer_id == SqliteStorage(data_dir).load_messages(at.query_params["chat"])[-1].id
    history_action(at, "regenerate", answer_id)  # the new answer is a run on the server: waited for
    assert [text for _, text in bubbles(at)] == ["Describe the harbour", "A better answer"]
    assert stored(data_dir, at.query_params["chat"]) == [
        ("user", "Describe the harbour"),
        ("assistant", "A better answer"),
    ]
    assert len(fake_llm.chat.requests) == 2
    assert [m["role"] for m in fake_llm.chat.last.json["messages"][1:]] == ["user"]


def test_regenerate_from_a_tab_drawn_before_the_last_turn_is_refused_by_storage_and_loses_nothing(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.chat.push(openai_text("First answer"), openai_text("Second answer"))
    at = send(new_page(), "First question")
    [(first_answer, _)] = action_targets(at, "regenerate")  # what a tab drawn now offers
    at = send(at, "Second question")  # the turn it offered is no longer the last
    before = stored(data_dir, at.query_params["chat"])
    history_action(at, "regenerate", first_answer)  # the old tab's click
    assert any("changed in another tab" in info.value for info in at.main.info)
    assert stored(data_dir, at.query_params["chat"]) == before
    history_action(at, "regenerate", "no-such-message")  # a forged target: nothing at all
    assert stored(data_dir, at.query_params["chat"]) == before and len(fake_llm.chat.requests) == 2


def test_every_message_has_copy(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("Answer **one**"))
    at = send(new_page(), "Question\nline two")
    drawn = message_elements(at)
    assert [role for role, _ in bubbles(at)] == ["user", "assistant"] and len(drawn) == 2
    assert [bubble["copy"] for bubble in drawn] == ["Question\nline two", "Answer **one**"]  # as written
    assert action_targets(at, "copy") == [(str(bubble["key"]), True) for bubble in drawn]  # one Copy on each
    assert [[b.label for b in buttons_in(str(bubble["html"])) if b.kind == "copy"] for bubble in drawn] == [
        ["Copy"],
        ["Copy"],
    ]


def test_a_question_from_before_a_model_was_configured_is_not_called_interrupted(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    from agent_app.storage import SqliteStorage
    from agent_app.types import ChatMessage

    storage = SqliteStorage(data_dir)
    project = storage.create_project("p")
    chat = storage.create_conversation(project.id)
    storage.append_message(chat.id, ChatMessage(role="user", content="Asked with no model set up"))
    storage.close()
    at = new_page({"project": project.id, "chat": chat.id})  # now the model is configured
    assert not at.main.warning and not at.main.error
    assert "This question has no answer yet." in [str(i.value) for i in at.main.info]
    fake_llm.chat.push(openai_text("Here it is."))
    click(at, "chat_retry")
    assert [text for _, text in bubbles(at)] == ["Asked with no model set up", "Here it is."]
    assert "This question has no answer yet." not in [str(i.value) for i in at.main.info] and not at.main.warning


def test_retry_takes_the_stale_retry_button_away_while_the_retried_run_goes(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.chat.push(error_reply(500, "upstream exploded"), delayed(openai_text("Answer after Retry."), 1.5))
    at = send(new_page(), "Summarise my clip")
    assert at.main.error and "chat_retry" in [button.key for button in at.main.button]

    at.button(key="chat_retry").click().run()  # the retried run starts and waits 1.5 s for the model
    assert run_going(at), "the retried run should still be going"
    # Queued until a worker takes the run up (a moment, longer on a busy machine), then asking the model.
    assert {"Asking the assistant…", QUEUED_LABEL} & set(statuses(at))
    assert "chat_retry" not in [button.key for button in at.main.button]  # no stale Retry under the live run
    assert not at.main.error
    at.run()  # a refresh of the chat part while the run still goes
    assert run_going(at) and "chat_retry" not in [button.key for button in at.main.button]

    settle(at)
    assert [text for _, text in bubbles(at)] == ["Summarise my clip", "Answer after Retry."]
    assert "chat_retry" not in [button.key for button in at.main.button] and not at.main.error
