"""Base of every result document (docs/contracts.md §3): ``apiVersion``, ``kind``, camelCase keys."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

API_VERSION = "kubectl-dra.io/v1alpha1"
PART_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)


class Part(BaseModel):
    """A nested part of a result document."""

    model_config = PART_CONFIG


def part(cls: type) -> type:
    """A part made by the thousand (a list row, a device, a reservation, a finding): a slotted
    stdlib dataclass, built without validation (our own code fills it) at a fraction of a model's
    cost, serialized by pydantic with the same camelCase keys as a :class:`Part`. Aliases other
    than camelCase go in ``Annotated[..., Field(alias=...)]``; list and dict defaults in
    ``dataclasses.field(default_factory=...)``."""
    cls.__pydantic_config__ = PART_CONFIG
    return dataclasses.dataclass(slots=True, kw_only=True)(cls)


@part
class Finding:
    """One thing worth telling the user; ``code`` is a stable CamelCase identifier."""

    code: str
    severity: Literal["error", "warning", "info"]
    message: str
    object: str | None = None  # the object the finding is about, as kind/namespace/name


class Document(Part):
    api_version: str = API_VERSION
    kind: str
    problems: list[str] = []  # what could not be read: the result is partial when non-empty
