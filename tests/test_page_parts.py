"""The page's parts on their own: the live status of a run, the history window, tool-card labels,
and the formats of durations and sizes."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from hypothesis import assume, given
from hypothesis.strategies import characters as st_characters
from hypothesis.strategies import sampled_from as st_sampled_from
from hypothesis.strategies import text as st_text
from markdown_it import MarkdownIt
from streamlit.runtime.scriptrunner import RerunData, RerunException
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Progress

from agent_app.clock import elapsed_text
from agent_app.types import ChatMessage, ExecutionState, ToolCall, ToolResult
from agent_app.ui.chat_history import group_turns, visible_slice
from agent_app.ui.formatting import count_of, escape_markdown, format_duration, format_size
from agent_app.ui.live_status import status_label
from agent_app.ui.markdown_text import chat_markdown
from agent_app.ui.recovery import is_unanswered, unfinished_calls
from agent_app.ui.rerun_guard import DeferringState, RerunDeferral
from agent_app.ui.tool_cards import card_label


def _live_status_script(stop_after_progress: bool) -> None:
    import streamlit as st

    from agent_app.types import ChatMessage, ToolCall, ToolResult
    from agent_app.ui.live_status import LiveStatus

    box = st.status("Asking the assistant…", expanded=True)
    live = LiveStatus(box)
    call = ToolCall(id="c1", name="transcribe_video", args={})
    live.on_status("sending", None)
    live.on_message(ChatMessage(role="assistant", tool_calls=[call]))
    live.on_status("processing", "transcribe_video")
    live.on_tool_progress(call, 0.25, "Decoding audio")
    live.on_tool_progress(call, 0.5, "Transcribing 1/2")
    if stop_after_progress:
        return
    result = ToolResult(tool_call_id="c1", name="transcribe_video", result={"text": "hi"}, duration_ms=900)
    live.on_status("processing", None)
    live.on_message(ChatMessage(role="tool", content="transcribe_video finished in 0.9 s", tool_result=result))
    live.on_status("responding", None)
    live.on_status("idle", None)


def test_live_status_names_the_running_tool_and_its_progress() -> None:
    at = AppTest.from_function(_live_status_script, args=(True,)).run()
    status = at.status[0]
    assert status.label == "Running transcribe_video…"
    assert status.state == "running"
    assert status.proto.expanded  # open while it runs
    assert "Calling **transcribe\\_video**" in status.markdown[0].value
    bars = [(p.value, p.proto.text) for p in status.get("progress") if isinstance(p, Progress)]
    assert bars == [(50, "transcribe_video: Transcribing 1/2")]


def test_live_status_completes_and_drops_the_progress_bar() -> None:
    at = AppTest.from_function(_live_status_script, args=(False,)).run()
    status = at.status[0]
    assert status.label == "Done"
    assert status.state == "complete"
    assert not status.proto.expanded
    assert "transcribe\\_video finished in 0\\.9 s" in status.markdown[1].value
    assert not status.get("progress")


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
    assert card_label(call, done) == "**transcribe\\_video** · done · 2.4 s"
    assert card_label(call, failed) == "**transcribe\\_video** · failed · 12 ms"
    assert card_label(call, None) == "**transcribe\\_video** · no result"


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


class _YieldingState(dict[str, Any]):
    """A session state that, like Streamlit's, raises a pending rerun request at the next access."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def _yield(self) -> None:
        if self.requests:
            self.requests -= 1
            raise RerunException(RerunData())

    def __getitem__(self, key: str) -> Any:
        self._yield()
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._yield()
        super().__setitem__(key, value)


def test_a_rerun_request_during_a_run_is_held_and_raised_after_it() -> None:
    deferral = RerunDeferral()
    state = _YieldingState()
    view = DeferringState(state, deferral)
    state.requests = 2  # two clicks arrive while the run writes
    view["answer"] = "stored"
    assert state["answer"] == "stored"  # the write went through despite them
    assert view["answer"] == "stored"
    assert deferral.pending is not None
    with pytest.raises(RerunException):
        deferral.release()
    deferral.release()  # nothing left to raise


def test_held_block_is_cut_short_but_the_request_kept() -> None:
    deferral = RerunDeferral()
    reached: list[str] = []
    with deferral.hold():
        raise RerunException(RerunData())
    reached.append("after")
    assert reached == ["after"] and deferral.pending is not None


def test_chat_markdown_turns_images_into_links_outside_code() -> None:
    text = "a ![t](http://e/x.png) `![span](y)` \\![esc](z) ![ref][r]\n~~~\n![fenced](f)\n~~~\n![after](w)"
    expected = "a [t](http://e/x.png) `![span](y)` \\![esc](z) [ref][r]\n~~~\n![fenced](f)\n~~~\n[after](w)"
    assert chat_markdown(text) == expected


def test_a_tool_note_and_its_card_write_the_duration_the_same_way() -> None:
    from agent_app.orchestrator import summarize

    call = ToolCall(id="c1", name="transcribe_video", args={})
    for duration_ms, written in ((11, "11 ms"), (2_400, "2.4 s"), (65_000, "1:05")):
        result = ToolResult(tool_call_id="c1", name="transcribe_video", result={}, duration_ms=duration_ms)
        assert summarize(result) == f"transcribe_video finished in {written}"  # never "finished in 0.0 s"
        assert card_label(call, result).endswith(f" · {written}")
