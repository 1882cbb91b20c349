"""Validation of a chat request, wherever it comes from: the route's JSON bytes or the page's objects.

:func:`parse_chat_request` is the HTTP edge (JSON syntax and shape); :func:`check_chat_request` is what
the handler runs on every request, so the route and the page cannot disagree about what a provider
accepts. Both raise :class:`~agent_app.errors.ChatError` of kind ``invalid_request`` naming the fields.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError
from pydantic_core import from_json

from agent_app.errors import ChatError, ErrorKind
from agent_app.types import ChatMessage, ChatRequest
from agent_app.validation import field_path

MAX_DETAILS = 50
"""Problems listed in a 400's ``details``: a 2 MB body of 100k bad messages must not earn a 10 MB answer."""
SUMMARY_PROBLEMS = 10
"""Problems quoted in the error text itself."""


def invalid_request(problems: list[tuple[str, str]]) -> ChatError:
    """The 400 for ``(field, message)`` problems: a summary text and the first :data:`MAX_DETAILS` details."""
    summary = "; ".join(f"{name}: {message}" for name, message in problems[:SUMMARY_PROBLEMS])
    if len(problems) > SUMMARY_PROBLEMS:
        summary += f"; and {len(problems) - SUMMARY_PROBLEMS} more"
    details = [{"field": name, "message": message} for name, message in problems[:MAX_DETAILS]]
    return ChatError(ErrorKind.INVALID_REQUEST, f"Invalid request: {summary}", details=details)


def parse_chat_request(body: bytes) -> ChatRequest:
    """The request in ``body``, or a :class:`ChatError` naming what is wrong with its JSON or its shape.

    ``NaN`` and ``Infinity`` are refused (they are not JSON; Python would send them on to the provider as
    invalid JSON); duplicate keys keep the last value, as in every JSON parser we talk to.
    """
    try:
        data = from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise invalid_request([("body", f"Invalid JSON: {exc}")]) from None
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise invalid_request([(field_path(e["loc"]) or "body", e["msg"]) for e in exc.errors()]) from None


def check_chat_request(request: ChatRequest) -> None:
    """Raise the 400 for a request no provider would accept: no messages, or :func:`conversation_problems`."""
    problems: list[tuple[str, str]] = []
    if not request.messages:
        problems.append(("messages", "must contain at least one message"))
    problems.extend(conversation_problems(request.messages))
    if problems:
        raise invalid_request(problems)


def conversation_problems(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """What makes ``messages`` a history no provider accepts, as ``(field, message)`` pairs.

    OpenAI and Gemini both reject a tool result that answers no call of the assistant turn right before
    it, and an assistant turn whose calls are not all answered before the conversation goes on. Such a
    history is the client's mistake, so it gets a 400 naming the message instead of a provider's 400
    reported as a 502. The orchestrator never sends one: it answers every call, even of a cut-off run.
    A blank user message is refused too: it asks nothing, and Gemini rejects an empty text part.
    """
    problems: list[tuple[str, str]] = []
    # The turn being answered: its index and, per call id still unanswered, the call's position in it. Field
    # names are written only for a problem (this runs on every request, over the whole history).
    turn = 0
    open_calls: dict[str, int] = {}
    for index, message in enumerate(messages):
        role = message.role
        if role == "tool":
            result = message.tool_result
            if result is None:
                problems.append(
                    (field_path(("messages", index, "toolResult")), "required for a message with role 'tool'")
                )
            elif open_calls.pop(result.tool_call_id, None) is None:
                problems.append(
                    (
                        field_path(("messages", index, "toolResult", "toolCallId")),
                        "answers no unanswered tool call of the assistant message before it",
                    )
                )
            continue
        if role == "user" and not message.content.strip():
            problems.append((field_path(("messages", index, "content")), "a user message must not be empty"))
        if open_calls:
            problems.extend(
                (_call_field(turn, position), "has no tool result before the next message")
                for position in open_calls.values()
            )
            open_calls = {}
        if message.tool_calls:
            turn, open_calls = index, _calls_to_answer(index, message, problems)
    problems.extend((_call_field(turn, position), "has no tool result") for position in open_calls.values())
    return problems


def _calls_to_answer(index: int, message: ChatMessage, problems: list[tuple[str, str]]) -> dict[str, int]:
    """The position of each call of ``message`` (the history's ``index``) by id; its problems go to ``problems``."""
    if message.role != "assistant":
        problems.append((field_path(("messages", index, "toolCalls")), "only assistant messages may carry tool calls"))
        return {}
    calls: dict[str, int] = {}
    for position, call in enumerate(message.tool_calls or ()):
        if call.id in calls:
            problems.append((_call_field(index, position), "repeats the id of another call of the same message"))
        calls[call.id] = position
    return calls


def _call_field(index: int, position: int) -> str:
    return field_path(("messages", index, "toolCalls", position, "id"))
