"""The page's parts on their own: the live view of a run, the history window, tool-card labels,
and the formats of durations and sizes."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import assume, given
from hypothesis.strategies import characters as st_characters
from hypothesis.strategies import sampled_from as st_sampled_from
from hypothesis.strategies import text as st_text
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from agent_app.clock import elapsed_text
from agent_app.invisible_chars import INVISIBLE_CHARACTERS
from agent_app.runs.events import RunEvent
from agent_app.runs.recovery import is_unanswered, unfinished_calls
from agent_app.runs.view import RunView
from agent_app.types import ChatMessage, ExecutionState, ToolCall, ToolResult
from agent_app.ui.chat_history import group_turns, visible_slice
from agent_app.ui.chat_html import answer_html
from agent_app.ui.formatting import count_of, escape_markdown, format_duration, format_size
from agent_app.ui.live_status import status_label
from agent_app.ui.tool_cards import card_label, tool_card_html
from tests.history_html import (
    browser_scheme_unsafe,
    buttons_in,
    cards_in,
    classed_texts,
    link_targets,
    parse,
    tags,
)
from tests.page_support import bubbles, history_elements, statuses


def _live_run_script(stop_requested: bool) -> None:
    import streamlit as st

    from agent_app.runs.events import RunEvent
    from agent_app.runs.models import Run
    from agent_app.runs.view import RunView
    from agent_app.session_stores import AgentStore
    from agent_app.ui.chat_history import LastAnswer
    from agent_app.ui.live_status import LiveRun, render_live_run

    def event(seq: int, kind: str, **data: object) -> RunEvent:
        return RunEvent.model_validate({"runId": "r1", "seq": seq, "data": {"kind": kind, **data}, "createdAt": 0})

    view = RunView(run_id="r1").apply(
        [
            event(1, "status", status="sending", activeTool=None),
            event(2, "message", id="m1", role="assistant"),
            event(3, "status", status="processing", activeTool="transcribe_video"),
            event(4, "tool_progress", toolCallId="c1", name="transcribe_video", fraction=0.25, message="Decoding"),
            event(5, "tool_progress", toolCallId="c1", name="transcribe_video", fraction=0.5, message="Chunk 1/2"),
            event(6, "text", delta="So far "),
            event(7, "text", delta="*this*"),
        ]
    )
    run = Run(id="r1", conversation_id="c", state="running", stop_requested=stop_requested, created_at=0)
    agent = AgentStore(st.session_state)  # as the chat panel fills it from the run's view
    agent.set_status(view.status)
    agent.set_active_tool(view.active_tool)
    stored = LastAnswer([], lambda action: None)  # nothing stored after the question yet, and no clicks here
    render_live_run(None, LiveRun(run, view), agent, stored)  # type: ignore[arg-type]  # Stop is not clicked here


def test_live_run_names_the_running_tool_its_progress_and_the_text_so_far() -> None:
    at = AppTest.from_function(_live_run_script, args=(False,)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert statuses(at) == ["Running transcribe_video…"]
    [live] = history_elements(at)
    html = str(live["html"])
    assert [attrs.get("role") for _, attrs, _ in parse(html) if "status" in str(attrs.get("class"))] == ["status"]
    bars = [(float(str(a["value"])), float(str(a["max"]))) for tag, a, _ in parse(html) if tag == "progress"]
    assert bars == [(0.5, 1.0)] and classed_texts(html, "progress") == ["transcribe_video: Chunk 1/2"]
    assert bubbles(at) == [("assistant", "So far this")]
    assert "<p>So far <em>this</em></p>" in html  # the streamed Markdown drawn as it will be when done
    assert not buttons_in(html)  # no Copy, Edit or Regenerate on a turn still running
    assert at.button(key="chat_stop").disabled is False


def test_live_run_says_stopping_once_stop_was_pressed() -> None:
    at = AppTest.from_function(_live_run_script, args=(True,)).run()
    assert statuses(at) == ["Stopping…"]
    assert at.button(key="chat_stop").disabled


def _event(seq: int, kind: str, **data: object) -> RunEvent:
    return RunEvent.model_validate({"runId": "r1", "seq": seq, "data": {"kind": kind, **data}, "createdAt": 0})


def test_run_view_folds_events_incrementally() -> None:
    view = RunView(run_id="r1").apply([_event(1, "text", delta="Hel"), _event(2, "text", delta="lo")])
    assert view.text == "Hello" and view.seq == 2
    view.apply([_event(2, "text", delta="lo"), _event(3, "message", id="m", role="assistant")])  # 2 seen already
    assert view.text == "" and view.seq == 3  # the finished message replaces the streamed text
    view.apply(
        [
            _event(4, "tool_progress", toolCallId="c1", name="t", fraction=0.5, message="half"),
            _event(5, "usage", inputTokens=10, outputTokens=3),
            _event(6, "usage", inputTokens=12, outputTokens=4),
        ]
    )
    assert view.progress["c1"].fraction == 0.5 and (view.input_tokens, view.output_tokens) == (22, 7)
    view.apply([_event(7, "message", id="t", role="tool", toolCallId="c1"), _event(8, "end", state="stopped")])
    assert view.progress == {} and view.ended == "stopped"
    assert RunView.model_validate_json(view.model_dump_json()) == view  # kept in the session as JSON


def test_status_label_names_the_running_tool_and_covers_every_state() -> None:
    assert status_label("processing", "transcribe_video") == "Running transcribe_video…"
    labels = [status_label(state, None) for state in get_args(ExecutionState)]
    assert all(labels) and len(set(labels)) == len(labels)  # every state says something of its own


def _turn_messages() -> list[ChatMessage]:
    call = ToolCall(id="c1", name="transcribe_video", args={})
    return [
        ChatMessage(role="user", content="q1"),
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", content="done", tool_result=ToolResult(tool_call_id="c1", name="transcribe_video")),
        ChatMessage(role="assistant", content="a1"),
        ChatMessage(role="user", content="q2"),
        ChatMessage(role="assistant", content="a2"),
    ]


def test_history_groups_a_tool_turn_into_one_assistant_bubble() -> None:
    turns = group_turns(_turn_messages())
    assert [(turn.role, len(turn.messages)) for turn in turns] == [
        ("user", 1),
        ("assistant", 3),
        ("user", 1),
        ("assistant", 1),
    ]


def test_history_window_never_separates_a_tool_result_from_its_call() -> None:
    messages = _turn_messages()
    hidden, shown = visible_slice(messages, 4)  # the last four start at the tool result
    assert hidden == 1
    assert shown[0].role == "assistant" and shown[0].tool_calls
    assert visible_slice(messages, 100) == (0, messages)


def test_card_label_says_how_a_call_ended() -> None:
    call = ToolCall(id="c1", name="transcribe_video", args={})
    done = ToolResult(tool_call_id="c1", name="transcribe_video", result={}, duration_ms=2400)
    failed = ToolResult(tool_call_id="c1", name="transcribe_video", error="boom", duration_ms=12)
    assert card_label(call, done) == "transcribe_video · done · 2.4 s"
    assert card_label(call, failed) == "transcribe_video · failed · 12 ms"
    assert card_label(call, None) == "transcribe_video · no result"
    drawn = [cards_in(tool_card_html(call, result))[0] for result in (done, failed, None)]
    assert [(card.label, card.state) for card in drawn] == [
        ("transcribe_video · done · 2.4 s", "done"),
        ("transcribe_video · failed · 12 ms", "failed"),
        ("transcribe_video · no result", "pending"),
    ]
    assert all("<b>transcribe_video</b>" in card.html for card in drawn)  # the name stands out
    assert drawn[1].errors == ["boom"] and drawn[2].notes[-1].startswith("No result was recorded")


def test_formats() -> None:
    assert format_duration(83_000) == "1:23"
    assert format_duration(3_723_000) == "1:02:03"
    assert format_duration(None) == "–"
    assert format_size(512) == "512 B"
    assert format_size(4_404_019) == "4.2 MB"
    assert format_size(3 * 1024**4) == "3072.0 GB"
    assert elapsed_text(65_000) == "1:05"
    assert [count_of(n, "message") for n in (0, 1, 2)] == ["0 messages", "1 message", "2 messages"]


def test_unfinished_calls_and_unanswered_conversations() -> None:
    messages = _turn_messages()
    assert unfinished_calls(messages) == []
    assert not is_unanswered(messages)
    dangling = ToolCall(id="c2", name="transcribe_video", args={})
    cut = [*messages, ChatMessage(role="user", content="q3"), ChatMessage(role="assistant", tool_calls=[dangling])]
    assert unfinished_calls(cut) == [dangling]
    assert is_unanswered(cut)
    assert is_unanswered(cut[:-1])  # a question without an answer
    assert not is_unanswered([])


_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _as_html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@given(st_text(alphabet=st_characters(min_codepoint=32, max_codepoint=126) | st_sampled_from("éü中"), min_size=1))
def test_escaped_names_render_as_exactly_their_characters(name: str) -> None:
    """An independent CommonMark parser (with GitHub's tables and strikethrough) shows the escaped name as
    one paragraph of plain text: no emphasis, link, image, code, heading, list, table, HTML or entity."""
    name = name.strip()
    assume(name)
    assert _MARKDOWN.render(escape_markdown(name)) == f"<p>{_as_html_text(name)}</p>\n"


def test_escape_markdown_escapes_what_streamlit_adds() -> None:
    """``$…$`` is LaTeX and ``:red[…]`` colour in Streamlit's Markdown (not CommonMark): both are escaped."""
    assert escape_markdown("$x$ :red[y] :smile:") == "\\$x\\$ \\:red\\[y\\] \\:smile\\:"
    assert escape_markdown("# clip_1 (final).mp4") == "\\# clip\\_1 \\(final\\)\\.mp4"


def test_answer_html_turns_images_into_links_outside_code() -> None:
    """No image is ever fetched: each becomes a link to its address (its alt text the link's text); ``![`` in
    code spans and fenced code is just text."""
    text = (
        "a ![t](http://e/x.png) `![span](y)` \\![esc](z) ![ref][r]\n~~~\n![fenced](f)\n~~~\n![after](w)\n\n"
        "[r]: http://e/r.png"
    )
    html = answer_html(text)
    assert "img" not in tags(html)
    links = [(attrs["href"], inside) for tag, attrs, inside in parse(html) if tag == "a"]
    assert links == [("http://e/x.png", "t"), ("z", "esc"), ("http://e/r.png", "ref"), ("w", "after")]
    code = [inside for tag, _, inside in parse(html) if tag == "code"]
    assert code == ["![span](y)", "![fenced](f)\n"]
    assert [(a["href"], inside) for tag, a, inside in parse(answer_html("![](http://e/n.png)")) if tag == "a"] == [
        ("http://e/n.png", "http://e/n.png")  # an image with no alt text is a link showing its address
    ]
    assert all(a.get("target") == "_blank" and a.get("rel") == "noopener noreferrer nofollow"
               for tag, a, _ in parse(html) if tag == "a")  # fmt: skip


def test_a_tool_note_and_its_card_write_the_duration_the_same_way() -> None:
    from agent_app.tool_calls import summarize

    call = ToolCall(id="c1", name="transcribe_video", args={})
    for duration_ms, written in ((11, "11 ms"), (2_400, "2.4 s"), (65_000, "1:05")):
        result = ToolResult(tool_call_id="c1", name="transcribe_video", result={}, duration_ms=duration_ms)
        assert summarize(result) == f"transcribe_video finished in {written}"  # never "finished in 0.0 s"
        assert card_label(call, result).endswith(f" · {written}")


def _permissive_html(markdown: str) -> str:
    """CommonMark rendered by a renderer that makes a link of any address as written (markdown-it itself refuses
    ``data:``/``javascript:`` and percent-encodes controls, a browser's renderer need not): what is an unsafe
    link here would be one in some renderer."""
    parser = MarkdownIt("commonmark")
    parser.validateLink = lambda url: True  # type: ignore[method-assign]
    parser.normalizeLink = lambda url: url  # type: ignore[method-assign]
    return str(parser.render(markdown))


def _unsafe(html: str) -> list[str]:
    """The ``href`` and ``src`` addresses in ``html`` a browser would open with a code-running scheme."""
    return [target for target in link_targets(html) if browser_scheme_unsafe(target)]


@pytest.mark.parametrize(
    "answer",
    [
        "[open](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[open](DATA:text/html,<script>alert(1)</script>)",
        "[open](vbscript:msgbox(1))",
        "[open]( <data:text/html,x> )",
        "[open](&#100;ata:text/html,x)",
        "[open](&#x64;&#x61;&#x74;&#x61;&colon;text/html,x)",
        "[open](data\\:text/html,x)",
        "[open](javascript:alert(1))",
        "<data:text/html,x>",
        "<VBScript:msgbox(1)>",
        "[open][r]\n\n[r]: data:text/html,x",
        "[open][r]\n\n[r]:\n  <vbscript:x>",
        "[x\\\\](data:text/html,x)",
        "![pic](data:image/svg+xml,%3Csvg%20onload=alert(1)%3E)",
        "[open](file:///etc/passwd)",
        "<FILE:///etc/passwd>",
        "[open](  javascript:alert(1))",
        "[open](<java\tscript:alert(1)>)",
        "[open](<data\t:text/html,x>)",
        "[open](<\x01javascript:alert(1)>)",
        "[open](java&#9;script:alert(1))",
        "[open](jav&#x09;ascript:alert(1))",
        "[open](java&NewLine;script:alert(1))",
        "[open](&Tab;javascript:alert(1))",
        "[open](&#32;javascript:alert(1))",
        "[open](&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1))",
        "[open][r]\n\n[r]: <java\tscript:alert(1)>",
        "![pic](<java\tscript:alert(1)>)",
    ],
)
def test_answer_html_leaves_no_data_vbscript_javascript_or_file_link(answer: str) -> None:
    assert _unsafe(_permissive_html(answer))  # as the model wrote it, a CommonMark renderer makes it a link
    html = answer_html(answer)
    assert not _unsafe(html), html
    assert "img" not in tags(html)
    assert "a" not in tags(html), html  # left as text: not even a harmless relative link


@pytest.mark.parametrize(
    "answer",
    [
        "<java\tscript:alert(1)>",
        "<java\nscript:alert(1)>",
        "<java\rscript:alert(1)>",
        "<&#106;avascript:alert(1)>",
        "<javascript&colon;alert(1)>",
        "<data&#9;:text/html,x>",
    ],
)
def test_answer_html_leaves_an_autolink_with_a_broken_or_encoded_scheme_as_its_text(answer: str) -> None:
    """Not an autolink in CommonMark (an autolink's scheme has no controls, entities or escapes): shown as the
    characters written, never a link."""
    html = answer_html(answer)
    assert link_targets(html) == [] and "a" not in tags(html)
    [(_, _, shown)] = [element for element in parse(html) if element[0] == "p"]
    assert shown[0] + shown[-1] == "<>" and shown.endswith(("alert(1)>", "text/html,x>"))


def test_answer_html_keeps_ordinary_links_and_code() -> None:
    text = "[docs](https://example.com/a) <https://example.com/b> [rel](notes/data:1) `[c](data:x)` a < b"
    html = answer_html(text)
    assert link_targets(html) == ["https://example.com/a", "https://example.com/b", "notes/data:1"]
    assert [inside for tag, _, inside in parse(html) if tag == "code"] == ["[c](data:x)"]
    assert "a &lt; b" in html


def test_answer_html_draws_raw_html_as_text() -> None:
    html = answer_html('<script>alert(1)</script> <img src=x onerror=alert(1)> <a href="javascript:x">y</a>')
    assert tags(html) == ["p"] and link_targets(html) == []
    assert parse(html)[0][2] == '<script>alert(1)</script> <img src=x onerror=alert(1)> <a href="javascript:x">y</a>'


def test_card_label_shows_controls_and_direction_marks_of_a_tool_name_as_escapes() -> None:
    call = ToolCall(id="c1", name="evil\u202egnp.exe\x00\x1b[31m", args={})
    label = card_label(call, None)
    assert not INVISIBLE_CHARACTERS.search(label)
    assert label == "evil\\u202egnp.exe\\u0000\\u001b[31m · no result"
    html = tool_card_html(call, None)
    assert not INVISIBLE_CHARACTERS.search(html)
    assert cards_in(html)[0].label == label
