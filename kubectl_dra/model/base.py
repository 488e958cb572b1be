"""Shared pieces of the object model.

The model is a *view*: it names only the fields this tool reasons about and ignores the rest, so
objects from newer servers (extra fields) still load. The original dict is kept on every
top-level object so ``-o yaml`` can pass it through unchanged.

One bad field is not a missing object: a value that does not validate is dropped, the object is
kept, and the field's path is recorded (:attr:`KubeObject.invalid_fields`), so whatever is computed
from it can say "unknown" instead of calling a live pod gone.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from datetime import datetime
from typing import Annotated, Any, ClassVar, NamedTuple

from pydantic import (ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter, ValidationError,
                      WrapValidator)
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import InitErrorDetails, PydanticCustomError

from kubectl_dra.quantity import Quantity


_PARSED: dict[str, Quantity] = {}  # text -> its Quantity: a cluster repeats "100m" and "256Mi" 100,000 times
_PARSED_MOST = 65536
_FINE: set[int] = set()  # ids of cached quantities (alive as long as the cache) fine for any resource


def _to_quantity(value: Any) -> Any:
    """YAML turns ``cpu: 2`` into an int and ``cpu: 0.5`` into a float; quantities are text.
    Quantities are immutable, so one parsed text is shared by every object that holds it."""
    if isinstance(value, str):
        found = _PARSED.get(value)
        if found is None:
            found = Quantity.parse(value)
            if len(_PARSED) < _PARSED_MOST:
                _PARSED[value] = found
                if quantity_problem("cpu", found) is None:  # cpu's milli count is the strictest bound
                    _FINE.add(id(found))
        return found
    if isinstance(value, Quantity):
        return value
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, (int, float)):
        return _to_quantity(repr(value) if isinstance(value, float) else str(value))
    raise ValueError(f"invalid quantity {value!r}: not a string")


def to_quantity(value: Any) -> Quantity:
    """A quantity as a view field reads one (text, or the int or float YAML made of it); raises
    ValueError for anything else: for documents read without a view (overlay templates)."""
    return _to_quantity(value)


Qty = Annotated[Quantity, PlainValidator(_to_quantity), PlainSerializer(str, return_type=str)]
"""A Kubernetes quantity field: parsed exactly, printed canonically."""

ResourceList = dict[str, Qty]

INT64_MAX = 2**63 - 1


def is_overcommit_allowed(name: str) -> bool:
    """Upstream ``IsOvercommitAllowed``: native resources but huge pages may have requests < limits."""
    native = "/" not in name or "kubernetes.io/" in name  # IsNativeResource, IsPrefixedNativeResource
    return native and not name.startswith("hugepages-")


def shared_quantity(text: str) -> Quantity | None:
    """The one object kept for ``text`` when it parses and no resource finds its magnitude a
    problem (see :func:`is_shared_quantity`); None otherwise, never an exception."""
    found = _PARSED.get(text)
    if found is None:
        try:
            found = _to_quantity(text)
        except ValueError:
            return None
    return found if id(found) in _FINE else None


def is_shared_quantity(q: Quantity) -> bool:
    """Whether ``q`` is the one object kept for its text (alive as long as the process), with no
    magnitude problem for any resource: its id can key a cache."""
    return id(q) in _FINE


def quantity_problem(name: str, q: Quantity) -> str | None:
    """Why a core/v1 resource quantity is nonsense, in the API server's words where it has them."""
    if q.sign() < 0:
        return "must be greater than or equal to 0"  # ValidateNonnegativeQuantity
    if name == "cpu":
        counted, unit = q.milli_value(), "millicores"
    else:
        bytes_ = name in ("memory", "ephemeral-storage", "storage") or name.startswith("hugepages-")
        counted, unit = q.value(), "bytes" if bytes_ else "units"
    if counted > INT64_MAX:
        # the server stores it, but Value()/MilliValue() overflow int64 in the scheduler and kubelet
        return (f"more than the scheduler and kubelet can count (int64 {unit}): every value computed from it "
                "overflows")
    return None


def field_error(loc: tuple, message: str, value: object) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError("invalid_value", "{message}", {"message": message}),
                            loc=loc, input=str(value))


def _check_core_resources(value: Any, handler) -> dict:
    parsed = handler(value)
    errors = [field_error((name, ), f'Invalid value: "{q}": {problem}', q) for name, q in parsed.items()
              if id(q) not in _FINE and (problem := quantity_problem(name, q))]
    if errors:
        raise ValidationError.from_exception_data("ResourceList", errors)
    return parsed


CoreResourceList = Annotated[ResourceList, WrapValidator(_check_core_resources)]
"""A core/v1 resource list (pod requests, limits, overhead; node capacity): negative quantities are
rejected as the API server rejects them, and magnitudes past int64 because nothing can count them."""


VIEW_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)


@functools.cache
def adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


class View:
    """Base of every view: camelCase aliases, unknown fields ignored, immutable.

    Views are pydantic dataclasses with ``__slots__`` (:func:`view`), not BaseModels: a
    cluster's worth of objects is held at once, and a slotted instance costs about a fifth of a
    model instance (no per-object ``__dict__`` and fields-set). Validation is the same pydantic.
    """

    __slots__ = ()

    @classmethod
    def model_validate(cls, data: Any):
        return adapter(cls).validate_python(data)

    def model_dump(self, **kwargs: Any) -> Any:
        return adapter(type(self)).dump_python(self, **kwargs)

    def model_copy(self, update: dict | None = None):
        return dataclasses.replace(self, **(update or {}))


def view(cls: type) -> type:
    """Make a :class:`View` subclass a slotted, frozen, keyword-only pydantic dataclass."""
    return pydantic_dataclass(cls, slots=True, frozen=True, kw_only=True, config=VIEW_CONFIG)


@view
class OwnerReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


@view
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


@view
class Condition(View):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


class InvalidField(NamedTuple):
    path: str  # spec.containers[0].resources.requests.cpu
    reason: str


MAX_REPAIRS = 8  # rounds of dropping invalid values before an object is given up


def field_path(loc: tuple) -> str:
    """A pydantic error location as a user would look it up: ``spec.containers[0].name``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _drop(data: Any, loc: tuple) -> bool:
    """Remove the value at ``loc`` (or the deepest container on the way that holds it)."""
    parents = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) \
                and 0 <= part < len(node):
            parents.append((node, part))
            node = node[part]
        else:
            break
    if not parents:
        return False
    container, key = parents[-1]
    del container[key]
    return True


@view
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

    _raw: dict | None = dataclasses.field(default=None, init=False, repr=False, compare=False)
    _invalid: tuple[InvalidField, ...] = dataclasses.field(default=(), init=False, repr=False, compare=False)

    @classmethod
    def from_raw(cls, raw: dict, keep_raw: bool = True) -> "KubeObject":
        """Validate, dropping each value that does not validate (its path is recorded); raises
        :class:`ValidationError` only when the object cannot be kept (no name, or no repair helps)."""
        data = cls.normalize(raw)
        invalid: dict[str, str] = {}  # path -> the first reason (a later round may only say "required")
        for attempt in range(MAX_REPAIRS + 1):
            try:
                obj = adapter(cls).validate_python(data)
                break
            except ValidationError as exc:
                if attempt == MAX_REPAIRS:
                    raise
                if not invalid:
                    data = copy.deepcopy(data)  # never edit the caller's dict
                dropped = False
                for error in reversed(exc.errors()):  # later list items first: dropping one shifts the rest
                    loc = tuple(error["loc"])
                    if loc[:2] == ("metadata", "name") or loc == ("metadata",):
                        raise  # an object without a name cannot be told apart from others
                    invalid.setdefault(field_path(loc), error["msg"].removeprefix("Value error, "))
                    dropped = _drop(data, loc) or dropped
                if not dropped:
                    raise
        if not obj.metadata.name:
            raise ValidationError.from_exception_data(cls.__name__, [
                {"type": "missing", "loc": ("metadata", "name"), "input": raw.get("metadata")}])
        if invalid:
            object.__setattr__(obj, "_invalid", tuple(InvalidField(path, reason) for path, reason in sorted(invalid.items())))
        if keep_raw:
            object.__setattr__(obj, "_raw", raw)
        return obj

    @property
    def invalid_fields(self) -> tuple[InvalidField, ...]:
        """Fields whose values did not validate and were dropped (empty for a well-formed object)."""
        return self._invalid

    def invalid_under(self, *prefixes: str) -> list[str]:
        """Paths of invalid fields at or below any of ``prefixes`` (``spec.devices[2]``)."""
        return [f.path for f in self._invalid
                if any(f.path == p or f.path.startswith((p + ".", p + "[")) for p in prefixes)]

    @classmethod
    def normalize(cls, raw: dict) -> dict:
        """Turn an older API version's shape into the one the model describes (default: as is)."""
        return raw

    @property
    def raw(self) -> dict:
        return self._raw if self._raw is not None else {}

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
