"""The context budget and the fitting policy, on their own (the wired path is in test_context_window.py)."""

from __future__ import annotations

import pytest

from agent_app.context_budget import (
    DEFAULT_WINDOW_TOKENS,
    ContextBudget,
    context_budget,
    fixed_tokens,
    message_tokens,
    text_tokens,
    usage_scale,
)
from agent_app.context_fit import (
    STUB_PREFIX,
    TOO_LARGE_PREFIX,
    ContextTooLargeError,
    ContextWindow,
    fit_history,
    learned_budget,
    retry_budget,
)
from agent_app.prompt import build_system_prompt
from agent_app.request_validation import conversation_problems
from agent_app.types import ChatMessage, ContextReport, TokenUsage, ToolCall, ToolResult
from tests.long_conversations import ASSET, CONTEXT, chat_turn, long_conversation, page_turn, transcript_page

PROMPT = build_system_prompt(CONTEXT)


def budget(window: int, reserve: int = 0) -> ContextBudget:
    return ContextBudget(window, window - reserve, "LLM_CONTEXT_TOKENS")


def estimate(messages: list[ChatMessage], scale: float = 1.0) -> float:
    return (fixed_tokens(PROMPT, ()) + sum(message_tokens(m) for m in messages)) * scale


# --- the budget -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window", "input_tokens"),
    [
        ("gpt-4o-mini", 128_000, 128_000 - 8_192),
        ("gpt-4.1-nano", 1_047_576, 1_047_576 - 8_192),
        ("gpt-5-mini", 400_000, 272_000),
        ("gemini-2.5-flash", 1_048_576, 1_048_576 - 8_192),
        ("models/gemini-3-pro-preview", 1_048_576, 1_048_576 - 8_192),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072, 131_072 - 8_192),
        ("llama3:8b", 8_192, 8_192 - 1_024),
        ("qwen2.5:7b-instruct", 32_768, 32_768 - 4_096),
        ("Qwen/Qwen3-8B", 40_960, 40_960 - 5_120),
        ("some-new-model", DEFAULT_WINDOW_TOKENS, DEFAULT_WINDOW_TOKENS - 1_024),
    ],
)
def test_known_model_families_and_the_default(model: str, window: int, input_tokens: int) -> None:
    found = context_budget(model)
    assert (found.window_tokens, found.input_tokens) == (window, input_tokens)


def test_settings_override_the_table_and_the_answer_keeps_its_room() -> None:
    assert context_budget("gpt-4o", context_tokens=16_000) == ContextBudget(16_000, 14_000, "LLM_CONTEXT_TOKENS")
    assert context_budget("gpt-4o", context_tokens=16_000, max_output_tokens=1_000).input_tokens == 15_000
    # An output setting larger than the window still leaves the conversation a quarter of it.
    assert context_budget("gpt-4o", context_tokens=16_000, max_output_tokens=50_000).input_tokens == 4_000


def test_estimate_counts_bytes_so_non_latin_text_is_not_underestimated() -> None:
    assert text_tokens("a" * 300) == 100
    assert text_tokens("語" * 100) == 100  # 3 UTF-8 bytes each: about one token per character, as BPE gives


# --- fitting --------------------------------------------------------------------------------------------


def test_a_history_that_fits_is_sent_unchanged() -> None:
    messages = [*chat_turn(1), *page_turn(0, 2), ChatMessage(role="user", content="And now?")]
    fitted = fit_history(ContextWindow(budget(100_000), PROMPT, context=CONTEXT), messages)
    assert fitted.messages == messages
    assert fitted.report.left_out_messages == 0 and fitted.report.stubbed_results == 0
    assert fitted.report.estimated_tokens == round(estimate(messages))


def test_old_tool_results_become_stubs_before_any_turn_is_left_out() -> None:
    messages = [*page_turn(0, 1), *page_turn(1, 2), *chat_turn(3), ChatMessage(role="user", content="Summarize.")]
    room = round(estimate(messages)) - 500  # one stub is enough
    fitted = fit_history(ContextWindow(budget(room), PROMPT, context=CONTEXT), messages)
    assert fitted.report.left_out_messages == 0 and fitted.report.stubbed_results == 1
    stub = fitted.messages[2].tool_result
    assert stub is not None and stub.tool_call_id == "call_page_1"
    assert stub.result == (
        f"{STUB_PREFIX} transcript of interview.mp4 0:00–4:59, 900 words; call transcribe_video again with "
        f"assetId='{ASSET.id}', startMs=0, endMs=299800 to read it]"
    )
    assert fitted.messages[6] == messages[6]  # the newer page is sent whole
    again = fit_history(ContextWindow(budget(room), PROMPT, context=CONTEXT), messages)  # fitted alike again
    assert again.messages == fitted.messages and again.report == fitted.report
    unnamed = fit_history(ContextWindow(budget(room), PROMPT, context=None), messages).messages[2].tool_result
    assert unnamed is not None and f"transcript of {ASSET.id} 0:00–4:59, 900 words" in str(unnamed.result)
    assert messages[2].tool_result is not None and isinstance(messages[2].tool_result.result, dict)  # input intact


def test_a_thousand_message_conversation_fits_sixteen_thousand_tokens_and_stays_valid() -> None:
    messages = [*long_conversation(1_000, 10), ChatMessage(role="user", content="What did they say at 42:00?")]
    room = context_budget("fake-model", context_tokens=16_000)
    fitted = fit_history(ContextWindow(room, PROMPT, context=CONTEXT), messages)
    sent = fitted.messages
    assert fitted.report.estimated_tokens <= room.input_tokens
    assert estimate(sent) <= room.input_tokens
    assert conversation_problems(sent) == []
    assert sent[0].role == "user" and sent[-1] == messages[-1]
    assert fitted.report.first_sent_id == sent[0].id
    assert fitted.report.left_out_messages == messages.index(sent[0]) > 0
    kept_calls = [m for m in sent if m.tool_calls]
    assert all(m.provider_metadata == next(o for o in messages if o.id == m.id).provider_metadata for m in kept_calls)


@pytest.mark.parametrize("room", [1_500, 2_000, 3_000, 5_000, 8_000, 12_000, 20_000, 40_000])
def test_no_budget_separates_a_call_from_its_result(room: int) -> None:
    messages = [*long_conversation(200, 6), ChatMessage(role="user", content="Next?")]
    fitted = fit_history(ContextWindow(budget(room), PROMPT, context=CONTEXT), messages)
    assert conversation_problems(fitted.messages) == []
    assert fitted.messages[-1] == messages[-1]
    assert estimate(fitted.messages) <= room


def test_the_running_turn_keeps_its_latest_results_and_stubs_its_earlier_rounds() -> None:
    question = ChatMessage(role="user", content="Read the first fifteen minutes.")
    rounds = [page_turn(page, 10 + page)[1:3] for page in range(3)]
    messages = [*chat_turn(1), question, *[m for pair in rounds for m in pair]]
    room = round(estimate([question, *[m for pair in rounds for m in pair]])) - 6_000
    fitted = fit_history(ContextWindow(budget(room), PROMPT, context=CONTEXT), messages)
    results = [m.tool_result for m in fitted.messages if m.tool_result is not None]
    assert [isinstance(r.result, str) and r.result.startswith(STUB_PREFIX) for r in results] == [True, True, False]
    assert fitted.messages[0] == question and fitted.report.left_out_messages == 2


def test_a_single_message_too_large_is_refused_naming_it() -> None:
    messages = [*chat_turn(1), ChatMessage(role="user", content="x" * 60_000)]
    with pytest.raises(ContextTooLargeError, match=r"This message is too long .* about 20,00\d tokens"):
        fit_history(ContextWindow(budget(16_000, 2_000), PROMPT), messages)


def test_a_latest_tool_result_too_large_is_sent_as_a_note_so_the_model_asks_for_less() -> None:
    call = ToolCall(id="c1", name="transcribe_video", args={"assetId": ASSET.id})
    result = ToolResult(tool_call_id="c1", name=call.name, result=transcript_page(0) | {"text": "y" * 60_000})
    messages = [
        ChatMessage(role="user", content="Everything, please."),
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", tool_result=result),
    ]
    fitted = fit_history(ContextWindow(budget(16_000), PROMPT, context=CONTEXT), messages)
    sent = fitted.messages[2].tool_result
    assert sent is not None and isinstance(sent.result, str)
    assert sent.result.startswith(f"{TOO_LARGE_PREFIX} transcript of interview.mp4 0:00–4:59, 900 words")
    assert conversation_problems(fitted.messages) == [] and fitted.report.stubbed_results == 1


# --- the provider's own count -----------------------------------------------------------------------------


def report(estimated: int, scale: float = 1.0) -> ContextReport:
    return ContextReport(window_tokens=16_000, budget_tokens=14_000, estimated_tokens=estimated, scale=scale)


def test_the_estimate_is_scaled_by_the_usage_reported_for_the_previous_request() -> None:
    answered = ChatMessage(
        role="assistant", content="ok", usage=TokenUsage(input_tokens=700, output_tokens=3), context=report(1_000)
    )
    assert usage_scale([ChatMessage(role="user", content="hi")]) == 1.0
    assert usage_scale([answered, ChatMessage(role="user", content="more")]) == 0.7
    # Without usage on the latest answer, the correction learnt before carries on; absurd usage is clamped.
    assert usage_scale([answered.model_copy(update={"usage": None, "context": report(700, 0.7)})]) == 0.7
    assert usage_scale([answered.model_copy(update={"usage": TokenUsage(input_tokens=1)})]) == 0.5
    assert usage_scale([answered.model_copy(update={"usage": TokenUsage(input_tokens=99_000)})]) == 2.0


def test_a_corrected_estimate_sends_more_of_the_history() -> None:
    messages = [*long_conversation(200, 4), ChatMessage(role="user", content="Next?")]
    plain = fit_history(ContextWindow(budget(3_000), PROMPT), messages)
    corrected = fit_history(ContextWindow(budget(3_000), PROMPT), messages, 0.7)
    assert len(corrected.messages) > len(plain.messages)
    assert corrected.report.scale == 0.7 and corrected.report.estimated_tokens <= 3_000


OPENAI_REFUSAL = (
    "BadRequestError[400] (code context_length_exceeded): Error code: 400 - This model's maximum context length "
    "is 8000 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages."
)
GEMINI_REFUSAL = (
    "ClientError[400]: 400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'The input token count (9000) "
    "exceeds the maximum number of tokens allowed (8000).', 'status': 'INVALID_ARGUMENT'}}"
)


@pytest.mark.parametrize("refusal", [OPENAI_REFUSAL, GEMINI_REFUSAL])
def test_the_retry_uses_the_providers_own_count_and_window(refusal: str) -> None:
    smaller, scale = retry_budget(budget(16_000, 2_000), report(12_000), refusal)
    assert scale == 0.75  # the provider counted 9,000 where the estimate said 12,000
    assert smaller.input_tokens == int(8_000 * 14 / 16 * 0.8)  # its window, the same share for the answer, a margin


def test_a_refusal_without_numbers_shrinks_by_the_margin() -> None:
    smaller, scale = retry_budget(budget(16_000, 2_000), report(12_000), "context too long")
    assert (smaller.input_tokens, scale) == (11_200, 1.25)


def test_a_budget_learnt_from_a_refusal_holds_for_the_rest_of_the_conversation() -> None:
    configured = budget(16_000, 2_000)
    learnt = ChatMessage(
        role="assistant", content="ok", context=report(4_000).model_copy(update={"budget_tokens": 5_600})
    )
    assert learned_budget(configured, [learnt, ChatMessage(role="user", content="next")]).input_tokens == 5_600
    assert learned_budget(budget(32_000, 2_000), [learnt]).input_tokens == 30_000  # another window configured
    assert learned_budget(configured, [ChatMessage(role="user", content="first")]) == configured


def test_a_stubbed_copy_of_a_large_result_is_estimated_anew() -> None:
    big = ChatMessage(role="tool", tool_result=ToolResult(tool_call_id="c1", name="t", result={"text": "word " * 2000}))
    assert message_tokens(big) > 2000
    stub = big.model_copy(update={"tool_result": ToolResult(tool_call_id="c1", name="t", result="[left out]")})
    assert message_tokens(stub) < 50


def test_a_stubbed_transcript_with_word_times_is_asked_for_with_word_times_again() -> None:
    turn = page_turn(0, 1)
    result = turn[2].tool_result
    assert result is not None and isinstance(result.result, dict)
    segments = [
        {**s, "words": [{"startMs": s["startMs"], "endMs": s["endMs"], "text": "w"}]} for s in result.result["segments"]
    ]
    timed = result.model_copy(update={"result": {**result.result, "segments": segments}})
    messages = [*turn[:2], turn[2].model_copy(update={"tool_result": timed}), *turn[3:], *chat_turn(3),
                ChatMessage(role="user", content="Summarize.")]  # fmt: skip
    fitted = fit_history(ContextWindow(budget(round(estimate(messages)) - 500), PROMPT, context=CONTEXT), messages)
    stub = fitted.messages[2].tool_result
    assert stub is not None and str(stub.result).endswith("startMs=0, endMs=299800, words=True to read it]")
