"""Instance types, the input Karpenter matches overlays against (docs/contracts.md §6).

Karpenter gets them from its cloud provider; they are not API objects. They come from an
``InstanceTypeCatalog`` document, or, without one, are inferred from the NodeClaims and Nodes that
exist, which gives labels, zones, capacity types and capacity but no prices.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from kubectl_dra.document import Part
from kubectl_dra.errors import InputError
from kubectl_dra.model.base import Qty, field_path
from kubectl_dra.model.karpenter import NodeClaim, NodePool
from kubectl_dra.model.node import Node
from kubectl_dra.overlays.requirements import (
    CAPACITY_TYPE, HOSTNAME, IN, INSTANCE_TYPE, NODEPOOL, OPERATORS, ZONE, Requirement, Requirements, normalize_key,
    shape_problem,
)

CATALOG_KIND = "InstanceTypeCatalog"
CATALOG_API_VERSION = "kubectl-dra.io/v1alpha1"


def _label_text(value: Any) -> Any:
    """YAML reads ``instance-cpu: 8`` as an int; label values are text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


class SelectorRequirement(Part):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)

    @field_validator("values", mode="before")
    @classmethod
    def _texts(cls, value: Any) -> Any:
        return [_label_text(v) for v in value] if isinstance(value, list) else value

    @field_validator("operator")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in OPERATORS:
            raise ValueError(f"unsupported operator {value!r} (one of {', '.join(OPERATORS)})")
        return value

    @model_validator(mode="after")
    def _shape(self) -> "SelectorRequirement":
        problem = shape_problem(self.operator, self.values)
        if problem:
            raise ValueError(f"key {self.key}: {problem}")
        return self


class Offering(Part):
    """Where and how an instance type can be bought; ``price`` None means unknown."""

    zone: str | None = None
    capacity_type: str | None = None
    price: float | None = None
    requirements: list[SelectorRequirement] = Field(default_factory=list)  # provider keys, e.g. reservation id
    available: bool = True

    @field_validator("requirements", mode="before")
    @classmethod
    def _mapping(cls, value: Any) -> Any:
        if isinstance(value, dict):  # {key: value} shorthand
            return [{"key": k, "operator": IN, "values": [_label_text(v)]} for k, v in value.items()]
        return value

    @field_validator("price", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("price must be a number")
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ValueError(f"price {value!r} is not a number") from None
        if isinstance(value, (int, float)) and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"price {value!r} must be a finite number >= 0")
        return value

    def requirement_set(self) -> Requirements:
        reqs = Requirements.from_selector(self.requirements)
        if self.zone is not None:
            reqs.add(Requirement.of(ZONE, IN, (self.zone,)))
        if self.capacity_type is not None:
            reqs.add(Requirement.of(CAPACITY_TYPE, IN, (self.capacity_type,)))
        return reqs

    def slot(self) -> str:
        """Identifies the offering the way Karpenter keys price overlays: by its requirements."""
        return ", ".join(str(r) for r in sorted(self.requirement_set(), key=lambda r: r.key))


class InstanceType(Part):
    name: str
    node_pools: list[str] | None = None  # None: offered to every NodePool
    labels: dict[str, str] = Field(default_factory=dict)
    requirements: list[SelectorRequirement] = Field(default_factory=list)
    capacity: dict[str, Qty] = Field(default_factory=dict)
    overhead: dict[str, Qty] = Field(default_factory=dict)  # kube/system reserved + eviction, when known
    offerings: list[Offering] = Field(default_factory=list)
    source: Literal["catalog", "inferred"] = "catalog"

    @field_validator("labels", mode="before")
    @classmethod
    def _texts(cls, value: Any) -> Any:
        return {k: _label_text(v) for k, v in value.items()} if isinstance(value, dict) else value

    def offered_to(self, nodepool: str) -> bool:
        return self.node_pools is None or nodepool in self.node_pools

    def requirement_set(self) -> Requirements:
        """What Karpenter's provider would report: labels, multi-valued requirements, the name, and
        for every offering key (zone, capacity type, reservation id...) that neither labels nor
        requirements name, the values its offerings have."""
        reqs = Requirements.from_labels(self.labels)
        reqs.add(*Requirements.from_selector(self.requirements))
        if INSTANCE_TYPE not in reqs:
            reqs.add(Requirement.of(INSTANCE_TYPE, IN, (self.name,)))
        offered: dict[str, set[str]] = {}
        for offering in self.offerings:
            for req in offering.requirement_set():
                if not req.complement:
                    offered.setdefault(req.key, set()).update(req.values)
        for key, values in offered.items():
            if key not in reqs:
                reqs.add(Requirement.of(key, IN, sorted(values)))
        return reqs

    @property
    def prices_known(self) -> bool:
        return all(o.price is not None for o in self.offerings)


def from_catalog(doc: dict, problems: list[str] | None = None) -> list[InstanceType]:
    """The instance types of one catalog document.

    A document that is not a catalog at all is an :class:`InputError`. With ``problems`` given, a
    bad entry costs only what depends on it and is said there, naming the field: a bad price
    becomes unknown; any other bad field leaves that instance type out (its matching would be a
    guess). Without ``problems``, the first bad entry is an :class:`InputError`."""
    if not isinstance(doc, dict):
        raise InputError(f"{CATALOG_KIND}: expected an object, found {type(doc).__name__}")
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    where = f"{CATALOG_KIND} {name}" if name else CATALOG_KIND

    def bad(message: str) -> None:
        if problems is None:
            raise InputError(f"{where}: {message}")
        problems.append(f"{where}: {message}")

    version = doc.get("apiVersion")
    if version is not None and version != CATALOG_API_VERSION:
        bad(f"apiVersion {version!r} is not {CATALOG_API_VERSION!r}, the only version this tool reads; "
            "read as that version")
    items = doc.get("instanceTypes")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise InputError(f"{where}: instanceTypes must be a list")
    result: list[InstanceType] = []
    seen: dict[str, list[str] | None] = {}
    for i, item in enumerate(items):
        label = f"instanceTypes[{i}]"
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            label = f"instance type {item['name']}"
        if not isinstance(item, dict):
            bad(f"{label}: expected an object; left out")
            continue
        if "source" in item:
            item = {k: v for k, v in item.items() if k != "source"}
        it = _validate_instance_type(item, label, bad)
        if it is None:
            continue
        mislabeled = next((value for key, value in it.labels.items()
                           if normalize_key(key) == INSTANCE_TYPE and value != it.name), None)
        if mislabeled is not None:
            bad(f"{label}: label {INSTANCE_TYPE} is {mislabeled!r}, but the name is {it.name!r}; left out")
            continue
        if it.name in seen:
            earlier = seen[it.name]
            if earlier is None or it.node_pools is None or set(earlier) & set(it.node_pools):
                bad(f"{label} is listed twice for the same NodePool; the second is left out")
                continue
            seen[it.name] = list(earlier) + list(it.node_pools)
        else:
            seen[it.name] = it.node_pools
        result.append(it)
    return result


def _validate_instance_type(item: dict, label: str, bad) -> InstanceType | None:
    """Validate one entry, telling ``bad`` each invalid field: an invalid offering price is dropped
    (unknown), any other invalid field leaves the entry out."""
    try:
        return InstanceType.model_validate(item)
    except ValidationError as exc:
        errors = exc.errors()
    prices = [e for e in errors if len(e["loc"]) == 3 and e["loc"][0] == "offerings" and e["loc"][2] == "price"]
    for error in errors:
        reason = error["msg"].removeprefix("Value error, ")
        if error in prices:
            bad(f"{label}: {field_path(tuple(error['loc']))}: {reason}; that offering's price is unknown")
        else:
            bad(f"{label}: {field_path(tuple(error['loc']))}: {reason}; the instance type is left out")
    if len(prices) != len(errors):
        return None
    repaired = dict(item)
    repaired["offerings"] = [dict(o) if isinstance(o, dict) else o for o in item["offerings"]]
    for error in prices:
        repaired["offerings"][error["loc"][1]].pop("price", None)
    try:
        return InstanceType.model_validate(repaired)
    except ValidationError:  # cannot happen once the prices are gone; never guess
        return None


_NODE_SPECIFIC = frozenset({HOSTNAME, ZONE, CAPACITY_TYPE})


def _instance_labels(labels: dict[str, str]) -> dict[str, str]:
    """Labels a machine has because of its instance type (not its name, zone or Karpenter state)."""
    return {k: v for k, v in labels.items()
            if k not in _NODE_SPECIFIC and not k.startswith("karpenter.sh/") and not k.startswith("node-role.")}


def infer_from_cluster(nodes: list[Node], nodeclaims: list[NodeClaim],
                       nodepools: list[NodePool] = ()) -> list[InstanceType]:
    """Instance types seen on Karpenter-launched machines, one per (NodePool, instance type).

    Labels are those all machines of the group agree on; offerings are the zones and capacity
    types they run in, prices unknown. Capacity is the NodeClaim's (Karpenter's own prediction,
    which already includes any overlay capacity at launch time), else the Node's. The NodePool's
    template labels are left out: they come from the NodePool, not the instance type.
    """
    template_labels = {np.name: set(np.spec.template.metadata.labels) for np in nodepools}
    nodes_by_name = {n.name: n for n in nodes}
    claimed_nodes = {nc.status.node_name for nc in nodeclaims if nc.status.node_name}
    machines: list[tuple[str, dict[str, str], dict]] = []  # (name, labels, capacity)
    for nc in sorted(nodeclaims, key=lambda o: o.name):
        capacity = nc.status.capacity
        if not capacity and nc.status.node_name in nodes_by_name:
            capacity = nodes_by_name[nc.status.node_name].status.capacity
        machines.append((nc.name, nc.metadata.labels, capacity))
    for node in sorted(nodes, key=lambda o: o.name):
        if node.name not in claimed_nodes:
            machines.append((node.name, node.metadata.labels, node.status.capacity))
    groups: dict[tuple[str, str], list[tuple[str, dict[str, str], dict]]] = defaultdict(list)
    for name, labels, capacity in machines:
        it_name, pool = labels.get(INSTANCE_TYPE), labels.get(NODEPOOL)
        if it_name and pool:
            groups[(pool, it_name)].append((name, labels, capacity))
    result = []
    for (pool, it_name), members in sorted(groups.items()):
        common = _instance_labels(members[0][1])
        for _, labels, _ in members[1:]:
            common = {k: v for k, v in common.items() if labels.get(k) == v}
        common = {k: v for k, v in common.items() if k not in template_labels.get(pool, ())}
        offerings = sorted({(labels.get(ZONE), labels.get(CAPACITY_TYPE)) for _, labels, _ in members},
                           key=lambda zc: (zc[0] or "", zc[1] or ""))
        capacity = next((cap for _, _, cap in members if cap), {})
        result.append(InstanceType(
            name=it_name, node_pools=[pool], labels=common, capacity=dict(capacity), source="inferred",
            offerings=[Offering(zone=z, capacity_type=c, price=None) for z, c in offerings]))
    return result
