"""A tool's arguments, declared once as a pydantic model (:class:`ToolArgs`): the parameter list offered to
the model (:class:`ToolParameter`) is generated from it (:func:`argument_specs`) and a call's arguments are
validated by it. :data:`JSON_TYPES` is the one table of the JSON types a parameter may declare.

Decisions the spec leaves open, taken here once for every tool:

* Types are strict: ``"3"`` is not a number, ``true``/``false`` are not numbers or integers (although
  ``bool`` is an ``int`` in Python), ``NaN``/``Infinity`` are not numbers.
* ``integer`` accepts a float with no fractional part (``3.0``, made ``3``): JSON does not distinguish the
  two and Gemini hands every number over as a double.
* ``null`` for an *optional* argument means "not given" (OpenAI's strict mode makes models send ``null``
  for every optional parameter); ``null`` for a *required* argument is an error.
* Keys the model does not declare are ignored: a tool reads what it declares, and failing a call over a
  harmless extra key would only cost a round trip.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from agent_app.wire_model import WireModel

ParameterType: TypeAlias = Literal["string", "number", "integer", "boolean", "object", "array"]
"""The JSON Schema primitive types a tool parameter may declare (the providers' names too, in their case)."""


class JsonType(NamedTuple):
    """What one of the :data:`ParameterType` names stands for besides its JSON Schema name."""

    python: type
    """A value of it once parsed from JSON (and the annotation an argument model gives it)."""
    phrase: str
    """How an error message names it: "must be an integer"."""


JSON_TYPES: dict[ParameterType, JsonType] = {
    "boolean": JsonType(bool, "a boolean"),  # before integer: a bool is an int to Python
    "integer": JsonType(int, "an integer"),
    "number": JsonType(float, "a number"),
    "string": JsonType(str, "a string"),
    "object": JsonType(dict, "an object"),
    "array": JsonType(list, "an array"),
}


class ToolParameter(WireModel):
    """One declared argument of a tool (the spec's ``ToolParameter``), in the provider-agnostic format every
    adapter converts; generated from the tool's :class:`ToolArgs` by :func:`argument_specs`."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(min_length=1)
    type: ParameterType
    required: bool = False
    description: str = ""


class ToolArgs(BaseModel):
    """Base of every tool's argument model (see the module's decisions). Fields are snake_case, their
    keys on the wire camelCase; a field's ``description`` is what the model reads about it. ``ToolArgs``
    itself is the model of a tool without arguments."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True, allow_inf_nan=False, frozen=True
    )

    @model_validator(mode="before")
    @classmethod
    def _as_models_send_them(cls, data: Any) -> Any:
        """Undeclared keys and ``null`` optionals dropped, integral floats of integers made ``int``."""
        if not isinstance(data, Mapping):
            return data
        declared = _specs_by_key(cls)
        kept: dict[str, Any] = {}
        for key, value in data.items():
            spec = declared.get(key)
            if spec is None or (value is None and not spec.required):
                continue
            integral = spec.type == "integer" and isinstance(value, float) and value.is_integer()
            kept[key] = int(value) if integral else value
        return kept


def _json_type(key: str, schema: Mapping[str, Any]) -> ParameterType:
    options = schema.get("anyOf", [schema])
    kinds = {option.get("type", "object" if "$ref" in option else "") for option in options} - {"null"}
    kind = kinds.pop() if len(kinds) == 1 else ""
    if kind not in JSON_TYPES:
        raise TypeError(f"Tool argument {key!r} must have one JSON type ({', '.join(sorted(JSON_TYPES))}): {schema}")
    return cast(ParameterType, kind)


@functools.cache
def argument_specs(arguments: type[ToolArgs]) -> tuple[ToolParameter, ...]:
    """The declared arguments of ``arguments``, from its JSON Schema, in declaration order; a field without
    exactly one JSON type is a ``TypeError`` naming it (the provider schemas could not describe it)."""
    schema = arguments.model_json_schema(by_alias=True)
    required = set(schema.get("required", []))
    return tuple(
        ToolParameter(
            key=key,
            type=_json_type(key, field),
            required=key in required,
            description=str(field.get("description", "")),
        )
        for key, field in schema.get("properties", {}).items()
    )


@functools.cache
def _specs_by_key(arguments: type[ToolArgs]) -> dict[str, ToolParameter]:
    """The specs by camelCase key and by field name (a model may be filled by either)."""
    by_key = {spec.key: spec for spec in argument_specs(arguments)}
    by_name = {name: by_key[field.alias or name] for name, field in arguments.model_fields.items()}
    return {**by_name, **by_key}
