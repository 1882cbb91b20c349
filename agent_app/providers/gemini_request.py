"""Our history and tool schemas as a Gemini request, in google-genai's types: ``contents`` and a
``GenerateContentConfig`` holding the system instruction and the function declarations.

Why apart from the adapter (:mod:`agent_app.providers.gemini`): building the request and reading the answer
are separate jobs that meet only in ``provider_metadata``, where the adapter stores Gemini's own turn and
this module replays it (thought signatures included: Gemini 3 rejects a replayed function call without its
signature). Tools are ``FunctionDeclaration``s with typed ``Schema`` parameters, never Python callables (a
callable turns on the SDK's own tool loop, which would run tools behind the orchestrator's back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from google.genai import types as gt
from pydantic import ValidationError

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


def request_config(instruction: str, tool_schemas: Sequence[ToolSchema]) -> gt.GenerateContentConfig:
    """The request's config: the system instruction, the declarations, and automatic function calling off."""
    declarations = [tool_schema_to_gemini(schema) for schema in tool_schemas]
    return gt.GenerateContentConfig(
        system_instruction=instruction or None,
        tools=[gt.Tool(function_declarations=declarations)] if declarations else None,
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
    )


def model_turn(parts: Sequence[gt.Part]) -> Json:
    """The answer's turn as stored in ``provider_metadata``: the ``Content`` of the model role with ``parts``, as
    the API's JSON (camelCase, bytes as URL-safe base64), for the run's next request. (Turns stored by earlier
    releases are in the SDK's snake_case field names, which validate the same.) A part left empty is not kept:
    google-genai drops the fields it does not know, so a part of a newer kind reaches us empty, and Gemini
    refuses a part that holds nothing."""
    wire = (part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in parts)
    turn: Json = valid_data({"parts": [part for part in wire if part], "role": "model"})
    return turn


def _holds_something(part: gt.Part) -> bool:
    return any(value is not None for value in part.__dict__.values())


def _stored_turn(message: ChatMessage) -> tuple[gt.Content, dict[str, str | None]] | None:
    """Gemini's own turn and its call ids, when the metadata holds a valid ``Content`` with a part that is not
    empty and whose function calls are this message's. It is replayed as the model's turn, whatever role it
    claims (a route's client may send any ``Content``, and Gemini refuses a content without a valid role, with
    no parts, or with an empty one)."""
    metadata = (message.provider_metadata or {}).get(METADATA_KEY)
    raw = metadata.get("content") if isinstance(metadata, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        content = gt.Content.model_validate(raw)
    except ValidationError:
        return None
    parts = [part for part in content.parts or () if _holds_something(part)]
    names = [part.function_call.name or "" for part in parts if part.function_call is not None]
    if not parts or names != [call.name for call in message.tool_calls or []]:
        return None
    call_ids = metadata.get("callIds") if isinstance(metadata, dict) else None
    ids = {str(k): (str(v) if v else None) for k, v in call_ids.items()} if isinstance(call_ids, dict) else {}
    return gt.Content(role="model", parts=parts), ids


def _model_turn(message: ChatMessage) -> tuple[gt.Content | None, dict[str, str | None]]:
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
    return (gt.Content(role="model", parts=parts) if parts else None), ids


def _user_part(message: ChatMessage, gemini_ids: dict[str, str | None]) -> gt.Part:
    """A tool result as a ``FunctionResponse`` part (with Gemini's id of its call, when it gave one), or a user
    message's text."""
    result = message.tool_result
    if message.role == "user":
        return gt.Part(text=message.content)
    if result is None:
        raise ProviderError("a tool message without a tool result cannot be sent")
    payload: Json = {"error": result.error} if result.error is not None else {"output": result.result}
    gemini_id = gemini_ids.get(result.tool_call_id)
    return gt.Part(function_response=gt.FunctionResponse(name=result.name, response=payload, id=gemini_id))


def messages_to_gemini(messages: Sequence[ChatMessage]) -> tuple[list[gt.Content], list[str]]:
    """Our history as Gemini ``contents``, plus the texts of any ``system`` messages (which belong in
    ``system_instruction``). Every role is matched: a new one is a type error, never another role.

    Consecutive user-side parts share one ``Content``: all tool results of a model turn (as Gemini
    requires), and a user message that follows them or another user message (turns must alternate).
    """
    contents: list[gt.Content] = []
    system_texts: list[str] = []
    gemini_ids: dict[str, str | None] = {}
    pending: list[gt.Part] = []
    for message in messages:
        role = message.role
        if role == "tool" or (role == "user" and message.content.strip()):  # Gemini rejects an empty text part
            pending.append(_user_part(message, gemini_ids))
        elif role == "user":
            continue
        elif role == "system":
            system_texts.append(message.content)
        elif role == "assistant":
            turn, ids = _model_turn(message)
            gemini_ids.update(ids)
            if turn is not None:
                if pending:
                    contents.append(gt.Content(role="user", parts=pending))
                    pending = []
                contents.append(turn)
        else:
            assert_never(role)
    if pending:
        contents.append(gt.Content(role="user", parts=pending))
    return contents, system_texts
