"""The base of every model that crosses a boundary (``agent_app.types`` re-exports it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Base of every model that crosses a boundary: camelCase JSON, snake_case Python.

    Unknown keys are ignored rather than rejected so that a newer client or a provider adding a
    field never breaks an older server; wrong types still fail validation.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_wire(self) -> dict[str, Any]:
        """The camelCase JSON-ready form, leaving out unset optional fields (``None``)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
