"""Karpenter's node-selector requirement algebra, as NodeOverlay matching uses it.

A requirement is a value set that is either listed (``In``) or a complement (``NotIn``,
``Exists``), optionally bounded by inclusive integer bounds (``Gt n`` is stored as ``Gte n+1``,
``Lt n`` as ``Lte n-1``). The operator shown for a requirement is *derived* from that shape,
the way Karpenter derives it, because compatibility rules test the derived operator: an
``Exists`` with bounds counts as ``Exists``, an empty ``In`` as ``DoesNotExist``.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
GT, LT, GTE, LTE = "Gt", "Lt", "Gte", "Lte"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE)
BOUND_OPERATORS = (GT, LT, GTE, LTE)
NEGATIVE = (NOT_IN, DOES_NOT_EXIST)

NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
HOSTNAME = "kubernetes.io/hostname"

WELL_KNOWN_LABELS = frozenset({
    NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, "node.kubernetes.io/windows-build",
})
"""Karpenter core's well-known labels (providers register more; see ``offering_compatible``)."""

NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "failure-domain.beta.kubernetes.io/region": REGION,
}
"""Legacy aliases Karpenter rewrites to the stable key before comparing anything."""

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT64 = 2**63


def parse_int(text: str) -> int | None:
    """An integer the way Go's ``strconv.Atoi`` reads one (optional sign, int64), else None."""
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def shape_problem(operator: str, values) -> str | None:
    """Why an operator and its values cannot form a requirement, in Karpenter's and Kubernetes'
    terms (``In``/``NotIn`` need values, ``Exists``/``DoesNotExist`` none, a bound one
    non-negative integer), or None. Checked where requirements are read, so matching never meets one."""
    if operator not in OPERATORS:
        return f"unsupported operator {operator!r} (one of {', '.join(OPERATORS)})"
    values = list(values or ())
    if operator in (IN, NOT_IN) and not values:
        return f"operator {operator} must have at least one value"
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        return f"operator {operator} must have no values"
    if operator in BOUND_OPERATORS:
        number = parse_int(values[0]) if len(values) == 1 and isinstance(values[0], str) else None
        if number is None or number < 0:
            return f"operator {operator} must have a single non-negative integer value, not {values}"
    return None


def normalize_key(key: str) -> str:
    return NORMALIZED_LABELS.get(key, key)


class Requirement:
    """One key's allowed values; immutable once built."""

    __slots__ = ("key", "complement", "values", "gte", "lte")

    def __init__(self, key: str, complement: bool, values: frozenset[str] = frozenset(),
                 gte: int | None = None, lte: int | None = None) -> None:
        self.key = key
        self.complement = complement
        self.values = values
        self.gte = gte
        self.lte = lte

    @classmethod
    def of(cls, key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
        """Build from a node-selector requirement; bound operators need one integer value."""
        key = normalize_key(key)
        values = tuple(values)
        if operator == IN:
            return cls(key, False, frozenset(values))
        if operator == NOT_IN:
            return cls(key, True, frozenset(values))
        if operator == EXISTS:
            return cls(key, True)
        if operator == DOES_NOT_EXIST:
            return cls(key, False)
        if operator in BOUND_OPERATORS:
            number = parse_int(values[0]) if len(values) == 1 else None
            if number is None:
                raise ValueError(f"key {key} with operator {operator} must have a single integer value")
            if operator == GT:
                return cls(key, True, gte=number + 1)
            if operator == LT:
                return cls(key, True, lte=number - 1)
            if operator == GTE:
                return cls(key, True, gte=number)
            return cls(key, True, lte=number)
        raise ValueError(f"key {key} has an unsupported operator {operator}")

    @property
    def operator(self) -> str:
        """The derived operator: what Karpenter's compatibility rules look at."""
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def has(self, value: str) -> bool:
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values and _within(value, self.gte, self.lte)

    def intersection(self, other: Requirement) -> Requirement:
        complement = self.complement and other.complement
        gte = _max(self.gte, other.gte)
        lte = _min(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if gte is not None or lte is not None:
            values = frozenset(v for v in values if _within(v, gte, lte))
        if not complement:
            gte = lte = None
        return Requirement(self.key, complement, frozenset(values), gte, lte)

    def intersects(self, other: Requirement) -> bool:
        """Whether some value satisfies both (without building the intersection)."""
        gte = _max(self.gte, other.gte)
        lte = _min(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if self.complement:
            return any(v not in self.values and _within(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and _within(v, gte, lte) for v in self.values)
        small, large = self.values, other.values
        if len(small) > len(large):
            small, large = large, small
        if gte is None and lte is None:
            return not small.isdisjoint(large)
        return any(v in large and _within(v, gte, lte) for v in small)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return (self.key, self.complement, self.values, self.gte, self.lte) == \
            (other.key, other.complement, other.values, other.gte, other.lte)

    def __hash__(self) -> int:
        return hash((self.key, self.complement, self.values, self.gte, self.lte))

    def __repr__(self) -> str:
        return f"Requirement({str(self)!r})"

    def __str__(self) -> str:
        op = self.operator
        text = f"{self.key} {op}" if op in (EXISTS, DOES_NOT_EXIST) else f"{self.key} {op} {sorted(self.values)}"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        return text


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = parse_int(value)
    if number is None:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirements:
    """A set of requirements keyed by label key; adding a key twice intersects the two."""

    __slots__ = ("_by_key",)

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._by_key: dict[str, Requirement] = {}
        self.add(*requirements)

    @classmethod
    def from_selector(cls, items: Iterable) -> Requirements:
        """From node-selector requirements: objects with key/operator/values, or such dicts."""
        reqs = cls()
        for item in items:
            if isinstance(item, Mapping):
                reqs.add(Requirement.of(item["key"], item["operator"], item.get("values") or ()))
            else:
                reqs.add(Requirement.of(item.key, item.operator, item.values))
        return reqs

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        return cls(Requirement.of(k, IN, (v,)) for k, v in labels.items())

    def add(self, *requirements: Requirement) -> Requirements:
        for req in requirements:
            existing = self._by_key.get(req.key)
            self._by_key[req.key] = req if existing is None else req.intersection(existing)
        return self

    def copy(self) -> Requirements:
        new = Requirements()
        new._by_key = dict(self._by_key)
        return new

    def get(self, key: str) -> Requirement | None:
        return self._by_key.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __iter__(self):
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def keys(self):
        return self._by_key.keys()

    def intersection(self, other: Requirements) -> Requirements:
        return self.copy().add(*other)

    def incompatibility(self, incoming: Requirements, allow_undefined: frozenset[str] = frozenset()) -> str | None:
        """Why ``incoming`` cannot be met by this (existing) set, or None when it can.

        Karpenter's ``Compatible``: a key of ``incoming`` this set does not define fails unless
        its derived operator is NotIn/DoesNotExist (or the key is in ``allow_undefined``); on
        shared keys the value sets must intersect, except that two negative requirements are
        always compatible.
        """
        for req in incoming:
            if req.key in self._by_key or req.key in allow_undefined:
                continue
            if req.operator in NEGATIVE:
                continue
            return f"key {req.key} is not defined"
        conflict = self.conflict(incoming)
        return None if conflict is None else f"key {conflict[0].key}: {conflict[0]} not in {conflict[1]}"

    def conflict(self, incoming: Requirements) -> tuple[Requirement, Requirement] | None:
        """Karpenter's ``Intersects``: the first key both sets define whose values share none (two
        negative requirements always share), as (``incoming``'s requirement, this set's); None when
        every shared key intersects."""
        for req in incoming:
            existing = self._by_key.get(req.key)
            if existing is None or existing.intersects(req):
                continue
            if req.operator in NEGATIVE and existing.operator in NEGATIVE:
                continue
            return req, existing
        return None

    def compatible(self, incoming: Requirements, strict: bool = True,
                   allow_undefined: frozenset[str] | None = None) -> bool:
        """``strict`` denies undefined keys; otherwise undefined well-known keys are allowed."""
        if allow_undefined is None:
            allow_undefined = frozenset() if strict else WELL_KNOWN_LABELS
        return self.incompatibility(incoming, allow_undefined) is None

    def __repr__(self) -> str:
        return f"Requirements({', '.join(str(r) for r in sorted(self, key=lambda r: r.key))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._by_key == other._by_key


def offering_compatible(overlay: Requirements, offering: Requirements) -> bool:
    """Karpenter's ``Offerings.Compatible`` for one offering.

    Offering keys (zone, capacity type, provider reservation keys) are well-known labels, so the
    ones the overlay does not mention are allowed; the ones it does mention must intersect.
    """
    return overlay.incompatibility(offering, allow_undefined=frozenset(offering.keys())) is None
