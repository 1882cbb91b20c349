"""Our history and tool schemas as a Gemini request body: ``contents``, ``systemInstruction`` and ``tools``, as
the API's JSON, each message converted once (:class:`~agent_app.message_memo.MessageMemo`).

Why apart from the adapter (:mod:`agent_app.providers.gemini`): building the request and reading the answer
are separate jobs that meet only in ``provider_metadata``, where the adapter stores Gemini's own turn and
this module replays it (thought signatures included: Gemini 3 rejects a replayed function call without its
signature). Tools are ``FunctionDeclaration``s with typed ``Schema`` parameters, never Python callables (a
callable turns on the SDK's own tool loop, which would run tools behind the orchestrator's back).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any, assert_never

from google.genai import types as gt
from pydantic import BaseModel, ValidationError

from agent_app.message_memo import MessageMemo
from agent_app.providers.base import ProviderError
from agent_app.providers.provider_text import valid_data
from agent_app.types import ChatMessage, ToolSchema

METADATA_KEY = "gemini"
"""``provider_metadata[METADATA_KEY] = {"content": <the model's Content as the API's JSON>, "callIds": {ours:
Gemini's id or None}}``."""


def tool_schema_to_gemini(schema: ToolSchema) -> gt.FunctionDeclaration:
    """A ``FunctionDeclaration`` whose parameters carry the declared types; none when there are none.

    Gemini requires ``items`` on arrays; our internal format declares no item type, so arrays accept
    strings (the only arrays a tool of ours takes).
    """
    if not schema.parameters:
        return gt.FunctionDeclaration(name=schema.name, description=schema.description)
    properties: dict[str, gt.Schema] = {}
    for parameter in schema.parameters:
        prop = gt.Schema(type=gt.Type(parameter.type.upper()), description=parameter.description or None)
        if parameter.type == "array":
            prop.items = gt.Schema(type=gt.Type.STRING)
        properties[parameter.key] = prop
    required = [p.key for p in schema.parameters if p.required]
    return gt.FunctionDeclaration(
        name=schema.name,
        description=schema.description,
        parameters=gt.Schema(type=gt.Type.OBJECT, properties=properties, required=required or None),
    )


Json = dict[str, Any]


def wire_json(model: BaseModel) -> Json:
    """A google-genai model as the API's JSON: its own field aliases (camelCase), bytes as URL-safe base64,
    unset fields left out; what the SDK's request converter sends for every message we build. Only the nested
    fields of parts we replay but never build (``inlineData.mimeType``...) differ: the SDK writes those in its
    snake_case, ours are the API's camelCase, as Gemini sent them; Gemini reads both
    (``tests/test_gemini_request_body.py`` compares both with the SDK's typed call)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def request_body(instruction: str, tool_schemas: Sequence[ToolSchema], contents: list[Json]) -> Json:
    """The request's body fields: contents, system instruction and declarations, in the API's JSON."""
    return {"contents": contents, **_fixed(instruction, tuple(schema.model_dump_json() for schema in tool_schemas))}


@functools.lru_cache(maxsize=64)
def _fixed(instruction: str, schemas_json: tuple[str, ...]) -> Json:
    """The system instruction and declarations, built once per prompt and tool set (every request of a run sends
    the same ones)."""
    body: Json = {}
    if instruction:
        body["systemInstruction"] = wire_json(gt.Content(role="user", parts=[gt.Part(text=instruction)]))
    declarations = [tool_schema_to_gemini(ToolSchema.model_validate_json(text)) for text in schemas_json]
    if declarations:
        body["tools"] = [wire_json(gt.Tool(function_declarations=declarations))]
    return body


class _Answered:
    """The turns this process's answers stored lately (the API's JSON, built from the parts the SDK validated),
    by identity.

    Why: each request of a run replays the turn stored a moment before; validating it again cost about 16 µs
    per request (``bench/bench_provider_loop.py``). Each turn is held, so its id is not reused while it is
    kept; a turn read back from storage or sent by a route's client is another object, and is validated."""

    def __init__(self) -> None:
        self._items: dict[int, Json] = {}
        self._lock = threading.Lock()

    def add(self, turn: Json) -> None:
        with self._lock:
            self._items[id(turn)] = turn
            if len(self._items) > ANSWERED_KEPT:
                del self._items[next(iter(self._items))]

    def __contains__(self, turn: Json) -> bool:
        return self._items.get(id(turn)) is turn


ANSWERED_KEPT = 256
"""Turns kept: more than the runs that go at once ever have between an answer and their next request."""

_answered = _Answered()


def model_turn(parts: Sequence[gt.Part]) -> Json:
    """The answer's turn as stored in ``provider_metadata``: the ``Content`` of the model role with ``parts``, as
    the API's JSON, kept for the run's next request. (Turns stored before were in the SDK's field names, which
    validate the same.) A part left empty is not kept: google-genai drops the fields it does not know, so a part
    of a newer kind reaches us empty, and Gemini refuses a part that holds nothing."""
    turn: Json = valid_data({"parts": [wire for wire in map(wire_json, parts) if wire], "role": "model"})
    _answered.add(turn)
    return turn


def _validated_wire(raw: Json) -> Json | None:
    """A stored turn as the API's JSON, when it is a valid ``Content`` with a part that is not empty: the model's
    turn, whatever role it claims (a route's client may send any ``Content``, and Gemini refuses a content
    without a valid role, with no parts, or with an empty one)."""
    if raw in _answered:
        return raw
    try:
        content = wire_json(gt.Content.model_validate(raw))
    except ValidationError:
        return None
    parts = [part for part in content.get("parts", ()) if part]
    return {"parts": parts, "role": "model"} if parts else None


def _stored_turn(message: ChatMessage) -> tuple[Json, dict[str, str | None]] | None:
    """Gemini's own turn (validated, as the API's JSON) and its call ids, when the metadata holds a valid
    ``Content`` whose function calls are this message's."""
    metadata = (message.provider_metadata or {}).get(METADATA_KEY)
    raw = metadata.get("content") if isinstance(metadata, dict) else None
    wire = _validated_wire(raw) if isinstance(raw, dict) else None
    if wire is None:
        return None
    names = [part["functionCall"].get("name", "") for part in wire.get("parts", []) if "functionCall" in part]
    if names != [call.name for call in message.tool_calls or []]:
        return None
    call_ids = metadata.get("callIds") if isinstance(metadata, dict) else None
    ids = {str(k): (str(v) if v else None) for k, v in call_ids.items()} if isinstance(call_ids, dict) else {}
    return wire, ids


def _model_turn(message: ChatMessage) -> tuple[Json | None, dict[str, str | None]]:
    """The assistant turn and the Gemini ids of its calls: Gemini's own ``Content`` when stored, else rebuilt
    from our fields (a turn from another provider, or stored metadata that is not a valid ``Content`` or whose
    function calls are not this message's; no ids then, since those are ours and Gemini matches by name and
    order). No turn for one with nothing in it: Gemini rejects an empty text part."""
    stored = _stored_turn(message)
    if stored is not None:
        return stored
    parts: list[gt.Part] = [gt.Part(text=message.content)] if message.content.strip() else []
    parts.extend(gt.Part(function_call=gt.FunctionCall(name=c.name, args=c.args)) for c in message.tool_calls or [])
    ids: dict[str, str | None] = {call.id: None for call in message.tool_calls or []}
    return (wire_json(gt.Content(role="model", parts=parts)) if parts else None), ids


_model_turns = MessageMemo(_model_turn)
"""Each assistant turn validated and converted once: google-genai would validate and convert every turn of the
history again on every request of a run (about 0.3 ms per message)."""


def _response_part(message: ChatMessage, gemini_id: str | None) -> Json:
    """A ``functionResponse`` part, written as the API's JSON (a transcript is tens of KB that validating a
    google-genai ``Part`` would walk for nothing: the result is JSON already, checked when the tool returned)."""
    result = message.tool_result
    if result is None:
        raise ProviderError("a tool message without a tool result cannot be sent")
    payload: Json = {"error": result.error} if result.error is not None else {"output": result.result}
    response: Json = {"name": result.name, "response": payload}
    if gemini_id:
        response["id"] = gemini_id
    return {"functionResponse": response}


_user_parts: MessageMemo[dict[str | None, Json]] = MessageMemo(lambda message: {})
"""A user-side message's part, by the Gemini call id it answers (fixed by the turn before it): a transcript is
tens of KB that would otherwise be validated and converted again on every request of a run."""


def _user_part(message: ChatMessage, gemini_ids: dict[str, str | None]) -> Json:
    """A tool result as a ``functionResponse`` part (with Gemini's id of its call, when it gave one), or a user
    message's text."""
    gemini_id = gemini_ids.get(message.tool_result.tool_call_id) if message.tool_result is not None else None
    parts = _user_parts(message)
    part = parts.get(gemini_id)
    if part is None:
        part = parts[gemini_id] = (
            {"text": message.content} if message.role == "user" else _response_part(message, gemini_id)
        )
    return part


def messages_to_gemini(messages: Sequence[ChatMessage]) -> tuple[list[Json], list[str]]:
    """Our history as Gemini ``contents`` (the API's JSON), plus the texts of any ``system`` messages (which
    belong in ``system_instruction``). Every role is matched: a new one is a type error, never another role.

    Consecutive user-side parts share one ``Content``: all tool results of a model turn (as Gemini
    requires), and a user message that follows them or another user message (turns must alternate).
    """
    contents: list[Json] = []
    system_texts: list[str] = []
    gemini_ids: dict[str, str | None] = {}
    pending: list[Json] = []
    for message in messages:
        role = message.role
        if role == "tool" or (role == "user" and message.content.strip()):  # Gemini rejects an empty text part
            pending.append(_user_part(message, gemini_ids))
        elif role == "user":
            continue
        elif role == "system":
            system_texts.append(message.content)
        elif role == "assistant":
            model_turn, ids = _model_turns(message)
            gemini_ids.update(ids)
            if model_turn is not None:
                if pending:
                    contents.append({"parts": pending, "role": "user"})
                    pending = []
                contents.append(model_turn)
        else:
            assert_never(role)
    if pending:
        contents.append({"parts": pending, "role": "user"})
    return contents, system_texts
