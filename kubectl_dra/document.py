"""Base of every result document (DESIGN §4.3): ``apiVersion``, ``kind``, camelCase keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

API_VERSION = "kubectl-dra.io/v1alpha1"


class Part(BaseModel):
    """A nested part of a result document."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Finding(Part):
    """One thing worth telling the user; ``code`` is a stable CamelCase identifier."""

    code: str
    severity: Literal["error", "warning", "info"]
    message: str
    object: str | None = None  # the object the finding is about, as kind/namespace/name


class Document(Part):
    api_version: str = API_VERSION
    kind: str
    problems: list[str] = []  # what could not be read: the result is partial when non-empty
