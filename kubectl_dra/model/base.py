"""Shared pieces of the object model.

The model is a *view*: it names only the fields this tool reasons about and ignores the rest, so
objects from newer servers (extra fields) still load. The original dict is kept on every
top-level object so ``-o yaml`` can pass it through unchanged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, PrivateAttr
from pydantic.alias_generators import to_camel

from kubectl_dra.quantity import Quantity


def _to_quantity(value: Any) -> Any:
    """YAML turns ``cpu: 2`` into an int and ``cpu: 0.5`` into a float; quantities are text."""
    if isinstance(value, Quantity):
        return value
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, (int, float)):
        value = repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid quantity {value!r}: not a string")
    return Quantity.parse(value)


Qty = Annotated[Quantity, PlainValidator(_to_quantity), PlainSerializer(str, return_type=str)]
"""A Kubernetes quantity field: parsed exactly, printed canonically."""

ResourceList = dict[str, Qty]


class View(BaseModel):
    """Base of every nested view: camelCase aliases, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class OwnerReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(View):
    name: str = ""
    namespace: str | None = None
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)

    def controller(self) -> OwnerReference | None:
        return next((ref for ref in self.owner_references if ref.controller), None)


class Condition(View):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


class KubeObject(View):
    """A top-level API object: what every kind shares, plus the raw dict it came from."""

    KIND: ClassVar[str] = ""
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ()
    PLURAL: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    _raw: dict = PrivateAttr(default_factory=dict)

    @classmethod
    def from_raw(cls, raw: dict, keep_raw: bool = True) -> "KubeObject":
        obj = cls.model_validate(cls.normalize(raw))
        if keep_raw:
            obj._raw = raw
        return obj

    @classmethod
    def normalize(cls, raw: dict) -> dict:
        """Turn an older API version's shape into the one the model describes (default: as is)."""
        return raw

    @property
    def raw(self) -> dict:
        return self._raw

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` otherwise (as kubectl prints refs)."""
        return f"{self.metadata.namespace}/{self.metadata.name}" if self.metadata.namespace else self.metadata.name

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]
