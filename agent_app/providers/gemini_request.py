"""Our history and tool schemas as a Gemini request: ``contents``, ``system_instruction`` and declarations.

Why apart from the adapter (:mod:`agent_app.providers.gemini`): building the request and reading the answer
are separate jobs that meet only in ``provider_metadata``, where the adapter stores Gemini's own turn and
this module replays it (thought signatures included: Gemini 3 rejects a replayed function call without its
signature). Tools are ``FunctionDeclaration``s with typed ``Schema`` parameters, never Python callables (a
callable turns on the SDK's own tool loop, which would run tools behind the orchestrator's back).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, assert_never

from google.genai import types as gt
from pydantic import ValidationError
from pydantic_core import to_json

from agent_app.message_memo import MessageMemo
from agent_app.providers.base import ProviderError
from agent_app.types import ChatMessage, ParameterType, ToolSchema

METADATA_KEY = "gemini"
"""``provider_metadata[METADATA_KEY] = {"content": <the model Content as JSON>, "callIds": {ours: Gemini's
id or None}}``."""

_SCHEMA_TYPES: dict[ParameterType, gt.Type] = {
    "string": gt.Type.STRING,
    "number": gt.Type.NUMBER,
    "integer": gt.Type.INTEGER,
    "boolean": gt.Type.BOOLEAN,
    "object": gt.Type.OBJECT,
    "array": gt.Type.ARRAY,
}


def tool_schema_to_gemini(schema: ToolSchema) -> gt.FunctionDeclaration:
    """A ``FunctionDeclaration`` whose parameters carry the declared types; none when there are none.

    Gemini requires ``items`` on arrays; our internal format declares no item type, so arrays accept
    strings (the only arrays a tool of ours takes).
    """
    if not schema.parameters:
        return gt.FunctionDeclaration(name=schema.name, description=schema.description)
    properties: dict[str, gt.Schema] = {}
    for parameter in schema.parameters:
        prop = gt.Schema(type=_SCHEMA_TYPES[parameter.type], description=parameter.description or None)
        if parameter.type == "array":
            prop.items = gt.Schema(type=gt.Type.STRING)
        properties[parameter.key] = prop
    required = [p.key for p in schema.parameters if p.required]
    return gt.FunctionDeclaration(
        name=schema.name,
        description=schema.description,
        parameters=gt.Schema(type=gt.Type.OBJECT, properties=properties, required=required or None),
    )


def request_config(instruction: str, tool_schemas: Sequence[ToolSchema]) -> gt.GenerateContentConfig:
    """The request's config: system instruction, declarations, automatic function calling off."""
    return _config(instruction, tuple(schema.model_dump_json() for schema in tool_schemas))


@functools.lru_cache(maxsize=64)
def _config(instruction: str, schemas_json: tuple[str, ...]) -> gt.GenerateContentConfig:
    """Built once per prompt and tool set (a tool loop sends the same ones every request; see :class:`_Contents`
    for why google-genai's models are worth building once)."""
    declarations = [tool_schema_to_gemini(ToolSchema.model_validate_json(text)) for text in schemas_json]
    return gt.GenerateContentConfig(
        system_instruction=instruction or None,
        tools=[gt.Tool(function_declarations=declarations)] if declarations else None,
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
    )


Json = dict[str, Any]


class _Contents:
    """Validated ``Content`` objects by their JSON text, the :data:`CACHED_CONTENTS` last used kept. Why: google-
    genai validates every model it builds (a dozen per turn, 10-60 µs each), and a tool loop resends the whole
    history on every request; ``bench/bench_provider_loop.py`` misses its 0.3 ms target without it. The
    answer's own ``Content`` goes in with the JSON it is stored as (:func:`stored_content`), so the next request
    finds the model's turn without validating it again. The SDK only reads the objects."""

    def __init__(self) -> None:
        self._items: OrderedDict[bytes, gt.Content] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> gt.Content:
        with self._lock:
            content = self._items.get(key)
            if content is not None:
                self._items.move_to_end(key)
                return content
        content = gt.Content.model_validate_json(key)
        self.put(key, content)
        return content

    def put(self, key: bytes, content: gt.Content) -> None:
        with self._lock:
            self._items[key] = content
            self._items.move_to_end(key)
            if len(self._items) > CACHED_CONTENTS:
                self._items.popitem(last=False)


CACHED_CONTENTS = 2048
"""Holds a long conversation's whole fitted history: with 128 every request of a 1,000-message conversation
missed them all in turn (``bench/bench_context_window.py``)."""

_contents = _Contents()


def _validated(content: Json) -> gt.Content:
    return _contents.get(to_json(content))


def stored_content(content: gt.Content) -> Json:
    """The model's turn as stored in ``provider_metadata`` (JSON), remembered for the next request's replay."""
    data = content.model_dump(mode="json", exclude_none=True)
    _contents.put(to_json(data), content)
    return data


def _stored_turn(message: ChatMessage) -> tuple[gt.Content, dict[str, str | None]] | None:
    """Gemini's own ``Content`` of the turn and its call ids, when the metadata holds a valid one whose function
    calls are this message's."""
    metadata = (message.provider_metadata or {}).get(METADATA_KEY)
    raw = metadata.get("content") if isinstance(metadata, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        content = _validated(raw)
    except ValidationError:
        return None
    names = [part.function_call.name or "" for part in content.parts or [] if part.function_call is not None]
    if names != [call.name for call in message.tool_calls or []]:
        return None
    call_ids = metadata.get("callIds") if isinstance(metadata, dict) else None
    ids = {str(k): (str(v) if v else None) for k, v in call_ids.items()} if isinstance(call_ids, dict) else {}
    return content, ids


def _model_content(message: ChatMessage, gemini_ids: dict[str, str | None]) -> gt.Content | None:
    """The assistant turn: Gemini's own ``Content`` when stored, else rebuilt from our fields (a turn
    from another provider, or stored metadata that is not a valid ``Content`` or whose function calls are
    not this message's; no ids then, since those are ours and Gemini matches by name and order). ``None``
    for a turn with nothing in it: Gemini rejects an empty text part."""
    stored = _stored_turn(message)
    if stored is not None:
        gemini_ids.update(stored[1])
        return stored[0]
    parts: list[Json] = [{"text": message.content}] if message.content.strip() else []
    for call in message.tool_calls or []:
        gemini_ids[call.id] = None
        parts.append({"function_call": {"name": call.name, "args": call.args}})
    return _validated({"role": "model", "parts": parts}) if parts else None


def _response_part(message: ChatMessage, gemini_id: str | None) -> gt.Part:
    result = message.tool_result
    if result is None:
        raise ProviderError("a tool message without a tool result cannot be sent")
    payload: Json = {"error": result.error} if result.error is not None else {"output": result.result}
    response: Json = {"name": result.name, "response": payload}
    if gemini_id:
        response["id"] = gemini_id
    return gt.Part.model_validate({"function_response": response})


_user_parts: MessageMemo[dict[str | None, gt.Part]] = MessageMemo(lambda message: {})
"""A user-side message's validated part, by the Gemini call id it answers (fixed by the turn before it): a
transcript is tens of KB that google-genai would validate again on every request of a run."""


def _user_part(message: ChatMessage, gemini_ids: dict[str, str | None]) -> gt.Part:
    """A tool result as a ``function_response`` part (with Gemini's id of its call, when it gave one), or a user
    message's text."""
    gemini_id = gemini_ids.get(message.tool_result.tool_call_id) if message.tool_result is not None else None
    parts = _user_parts(message)
    part = parts.get(gemini_id)
    if part is None:
        part = parts[gemini_id] = (
            gt.Part(text=message.content) if message.role == "user" else _response_part(message, gemini_id)
        )
    return part


_user_contents: MessageMemo[dict[tuple[int, ...], gt.Content]] = MessageMemo(lambda message: {})
"""A user-side ``Content`` by the parts it groups, kept on the group's last message (each request of a run sends
the same groups; building one validates it again)."""


def _user_content(last: ChatMessage, parts: list[gt.Part]) -> gt.Content:
    contents = _user_contents(last)
    key = tuple(id(part) for part in parts)  # the Content holds its parts, so no id is reused while it is kept
    content = contents.get(key)
    if content is None:
        content = contents[key] = gt.Content(role="user", parts=parts)
    return content


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
    last: ChatMessage | None = None
    for message in messages:
        role = message.role
        if role == "tool" or (role == "user" and message.content.strip()):  # Gemini rejects an empty text part
            pending.append(_user_part(message, gemini_ids))
            last = message
        elif role == "user":
            continue
        elif role == "system":
            system_texts.append(message.content)
        elif role == "assistant":
            model_turn = _model_content(message, gemini_ids)
            if model_turn is not None:
                if pending and last is not None:
                    contents.append(_user_content(last, pending))
                    pending = []
                contents.append(model_turn)
        else:
            assert_never(role)
    if pending and last is not None:
        contents.append(_user_content(last, pending))
    return contents, system_texts
