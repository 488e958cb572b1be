"""Karpenter's NodeOverlay evaluation, re-done so it can be explained.

Karpenter recomputes everything in one pass: overlays sorted by weight (descending, unset = 0,
ties by name descending); each one validated, matched against every (NodePool, instance type),
checked for conflicts *everywhere* before anything of it is stored, then stored first-writer-wins
(price per offering, capacity per resource key). This module follows that pass step by step and
keeps what Karpenter throws away: who holds each slot, who a conflict is with, and the clashes
its capacity check cannot see.

Matching is indexed: a context (NodePool, instance type) can only match an overlay requirement
``key In [values]`` if it lists one of those values or defines the key as a complement, so the
candidates for an overlay come from set intersections and only those get the full check.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from kubectl_dra.model.karpenter import NodeOverlay, NodePool, order_by_weight
from kubectl_dra.overlays.catalog import InstanceType, Offering
from kubectl_dra.overlays.document import (
    InstanceTypeEffect, InstanceTypeView, KarpenterStatus, OfferingView, OverlayMatch,
    OverlayView,
)
from kubectl_dra.overlays.price import adjusted_price, is_absolute
from kubectl_dra.overlays.requirements import (
    CAPACITY_TYPE, IN, NODEPOOL, ZONE, Requirement, Requirements, offering_compatible,
)
from kubectl_dra.overlays.templates import DriverSlots, DynamicResources, parse_dynamic_resources, predict_slices
from kubectl_dra.overlays.validation import runtime_errors, schema_errors
from kubectl_dra.quantity import Quantity
from kubectl_dra.text import plural

HUGEPAGES_PREFIX = "hugepages-"


@dataclass(frozen=True)
class _OfferingSlot:
    """One offering and its price-slot key (Karpenter keys by the offering's requirements)."""

    key: str
    reqs: Requirements
    offering: Offering
    label: str  # "on-demand us-west-2a" for messages
    extra: dict[str, list[str]] | None  # provider keys beyond zone and capacity type


def _offering_slots(it: InstanceType) -> list[_OfferingSlot]:
    slots = []
    for off in it.offerings:
        reqs = off.requirement_set()
        extra = {r.key: sorted(r.values) for r in reqs if r.key not in (ZONE, CAPACITY_TYPE)} or None
        label = " ".join(str(x) for x in (off.capacity_type, off.zone) if x is not None) or "offering"
        if extra:
            label += " " + " ".join(f"{k}={','.join(v)}" for k, v in extra.items())
        slots.append(_OfferingSlot(off.slot(), reqs, off, label, extra))
    return slots


@dataclass(eq=False)
class _Context:
    """One (NodePool, instance type): what Karpenter matches an overlay against."""

    index: int
    pool: NodePool
    it: InstanceType
    reqs: Requirements
    offerings: list[_OfferingSlot]
    match: OverlayMatch  # shared by every overlay that matches this context

    @property
    def label(self) -> str:
        return f"{self.pool.name}/{self.it.name}"

    def node_labels(self) -> dict[str, str]:
        """Labels a node of this context is sure to carry (single-valued requirements)."""
        labels = {r.key: next(iter(r.values)) for r in self.reqs
                  if not r.complement and len(r.values) == 1}
        return labels


@dataclass(eq=False)
class _Overlay:
    obj: NodeOverlay
    name: str
    weight: int  # unset counts as 0
    order: int
    errors: list[str]
    schema_invalid: bool
    crd_skew: list[str]  # admitted by the cluster, though Karpenter v1.14.1's CRD refuses it
    change: str | None
    change_kind: str | None
    has_capacity: bool
    capacity: dict[str, Quantity]
    dynamic: DynamicResources
    reqs: Requirements | None = None
    status: str = "Ready"
    matches: list[tuple[_Context, list[int]]] = field(default_factory=list)
    conflicts_with: set[str] = field(default_factory=set)
    conflict_slots: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, where, peer)
    contested_prices: list[tuple[int, str]] = field(default_factory=list)  # price slots of the conflict
    template_only_conflict: bool = False
    won: int = 0
    lost: int = 0
    shadowed_by: set[str] = field(default_factory=set)
    undetected: set[str] = field(default_factory=set)

    def sets(self) -> list[str]:
        out = [self.change_kind] if self.change_kind else []
        if self.has_capacity:
            out.append("capacity")
        if self.dynamic:
            out.append("dynamicResources")
        return out


@dataclass(eq=False)
class _PriceSlot:
    winner: _Overlay
    lowest_weight: int
    last: _Overlay


@dataclass(eq=False)
class _CapacitySlot:
    keys: dict[str, tuple[_Overlay, Quantity]] = field(default_factory=dict)  # merged: first writer per key
    lowest_weight: int = 0
    last_keys: frozenset[str] = frozenset()  # only the most recently stored overlay's keys (Karpenter)
    last: _Overlay | None = None


class _Index:
    """Which contexts can satisfy an overlay requirement, by key and value."""

    def __init__(self, contexts: list[_Context]) -> None:
        self.all = set(range(len(contexts)))
        self.values: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.complement: dict[str, set[int]] = defaultdict(set)
        self.defined: dict[str, set[int]] = defaultdict(set)
        for ctx in contexts:
            for req in ctx.reqs:
                self.defined[req.key].add(ctx.index)
                if req.complement:
                    self.complement[req.key].add(ctx.index)
                else:
                    for value in req.values:
                        self.values[req.key][value].add(ctx.index)

    def candidates(self, reqs: Requirements) -> tuple[set[int], set[int]]:
        """(contexts that surely match, contexts that need the full check)."""
        plain = True
        sure: set[int] | None = None
        possible: set[int] | None = None
        for req in sorted(reqs, key=lambda r: len(r.values), reverse=False):
            if not req.complement and req.values:
                by_value = self.values.get(req.key, {})
                hits: set[int] = set()
                for value in req.values:
                    hits |= by_value.get(value, set())
                limit = hits | self.complement.get(req.key, set())
                sure = hits if sure is None else sure & hits
            elif req.complement and not req.values:  # Exists, possibly bounded
                limit = self.defined.get(req.key, set())
                plain = False
            else:  # NotIn, DoesNotExist: no index
                plain = False
                continue
            possible = set(limit) if possible is None else possible & limit
            if not possible:
                return set(), set()
        if possible is None:
            return set(), set(self.all)
        if not plain or sure is None:
            return set(), possible
        sure &= possible
        return sure, possible - sure


def karpenter_status(obj: NodeOverlay) -> KarpenterStatus | None:
    """The controller's verdict: ``ValidationSucceeded``, which carries the reason (Conflict,
    RuntimeValidation); ``Ready`` only says ``UnhealthyDependents`` then (seen on the real v1.14.1
    controller, docs/kubernetes/nodeoverlay.md §1.5), so it is read only when the other is absent."""
    conditions = {c.type: c for c in obj.status.conditions}
    condition = conditions.get("ValidationSucceeded") or conditions.get("Ready")
    if condition is None:
        return None
    observed = None
    for raw in (obj.raw.get("status") or {}).get("conditions") or []:
        if isinstance(raw, dict) and raw.get("type") == condition.type:
            observed = raw.get("observedGeneration")
    return KarpenterStatus(status=condition.status, reason=condition.reason, message=condition.message,
                           observed_generation=observed if isinstance(observed, int) else None)


def karpenter_verdict(status: KarpenterStatus) -> str | None:
    if status.status == "True":
        return "Ready"
    if status.status == "False":
        return status.reason if status.reason in ("Conflict", "RuntimeValidation") else f"False ({status.reason})"
    return None


def _has_capacity(obj: NodeOverlay) -> bool:
    """Go tells ``capacity: {}`` (a non-nil map, which Karpenter stores) from no capacity at all."""
    raw_spec = obj.raw.get("spec") if isinstance(obj.raw.get("spec"), dict) else {}
    return bool(obj.spec.capacity) or raw_spec.get("capacity") is not None


def _prepare(obj: NodeOverlay, order: int) -> _Overlay:
    schema = schema_errors(obj)
    # what the API server refuses never reaches the runtime check; but an object read from a cluster
    # (it has a uid) was admitted, by CRDs of another version: its fate is the controller's check
    admitted = bool(obj.uid)
    errors = runtime_errors(obj) if admitted else (schema or runtime_errors(obj))
    spec = obj.spec
    change, kind = (spec.price, "price") if spec.price is not None else (spec.price_adjustment, "priceAdjustment")
    if change is None:
        kind = None
    dynamic = parse_dynamic_resources(spec.dynamic_resources)
    ov = _Overlay(obj=obj, name=obj.name, weight=spec.weight or 0, order=order, errors=errors,
                  schema_invalid=bool(schema) and not admitted, crd_skew=schema if admitted else [],
                  change=change, change_kind=kind, has_capacity=_has_capacity(obj),
                  capacity=dict(spec.capacity), dynamic=dynamic)
    if not errors:
        ov.reqs = Requirements.from_selector(spec.requirements or ())
    return ov


def _contexts(nodepools: list[NodePool], instance_types: list[InstanceType]) -> list[_Context]:
    it_reqs = [(it, it.requirement_set()) for it in instance_types]
    offerings = {id(it): _offering_slots(it) for it in instance_types}
    contexts: list[_Context] = []
    for pool in sorted(nodepools, key=lambda p: p.name):
        base = Requirements([Requirement.of(NODEPOOL, IN, (pool.name,))])
        base.add(*Requirements.from_labels(pool.spec.template.metadata.labels))
        for it, reqs in it_reqs:
            if it.offered_to(pool.name):
                contexts.append(_Context(len(contexts), pool, it, base.intersection(reqs), offerings[id(it)],
                                         OverlayMatch.model_construct(node_pool=pool.name, instance_type=it.name)))
    return contexts


class _Evaluation:
    def __init__(self, overlays: list[NodeOverlay], nodepools: list[NodePool],
                 instance_types: list[InstanceType], gate_enabled: bool | None) -> None:
        self.nodepools = nodepools
        self.instance_types = instance_types
        self.gate_enabled = gate_enabled
        self.overlays = [_prepare(o, i + 1) for i, o in enumerate(order_by_weight(overlays))]
        self.contexts = _contexts(nodepools, instance_types)
        self.index = _Index(self.contexts)
        self.prices: dict[int, dict[str, _PriceSlot]] = {}  # context -> offering slot -> holder
        # Weights only decrease during the pass, so a context whose last stored price overlay is
        # heavier than the current one cannot hold a slot at the current weight: no slot check.
        self.price_floor: dict[int, int] = {}
        self.capacity: dict[int, _CapacitySlot] = {}
        self.drivers = DriverSlots()
        self._base_offerings: dict[int, OfferingView] = {}
        self._priced_offerings: dict[tuple[int, int], OfferingView] = {}
        self._base_capacities: dict[int, tuple[dict[str, str], str | None]] = {}
        self.undetected: dict[tuple[str, str], list[str]] = defaultdict(list)  # (loser, winner) -> details

    # -- matching ----------------------------------------------------------------------------------

    def match(self, ov: _Overlay) -> list[tuple[_Context, list[int]]]:
        assert ov.reqs is not None
        sure, maybe = self.index.candidates(ov.reqs)
        by_slot: dict[str, bool] = {}
        by_offerings: dict[int, list[int]] = {}  # an instance type's offerings are shared by its NodePools
        matches = []
        for ci in sorted(sure | maybe):
            ctx = self.contexts[ci]
            if ci in maybe and ctx.reqs.incompatibility(ov.reqs) is not None:
                continue
            positions = by_offerings.get(id(ctx.offerings))
            if positions is None:
                positions = []
                for pos, slot in enumerate(ctx.offerings):
                    ok = by_slot.get(slot.key)
                    if ok is None:
                        ok = by_slot[slot.key] = offering_compatible(ov.reqs, slot.reqs)
                    if ok:
                        positions.append(pos)
                by_offerings[id(ctx.offerings)] = positions
            if positions:
                matches.append((ctx, positions))
        return matches

    # -- Karpenter's validate and store phases -------------------------------------------------------

    def conflicts(self, ov: _Overlay) -> list[tuple[str, str, _Overlay | str]]:
        found: list[tuple[str, str, _Overlay | str]] = []
        for ctx, positions in ov.matches:
            if ov.change is not None and self.price_floor.get(ctx.index) == ov.weight:
                slots = self.prices[ctx.index]
                for pos in positions:
                    offering = ctx.offerings[pos]
                    slot = slots.get(offering.key)
                    if slot is not None and slot.lowest_weight == ov.weight:
                        found.append(("price", f"{ctx.label} {offering.label}", slot.last))
                        ov.contested_prices.append((ctx.index, offering.key))
            if ov.has_capacity:
                cap = self.capacity.get(ctx.index)
                if cap is not None and cap.last is not None and cap.lowest_weight == ov.weight \
                        and cap.last_keys & ov.capacity.keys():
                    keys = ", ".join(sorted(cap.last_keys & ov.capacity.keys()))
                    found.append(("capacity", f"{ctx.label} {keys}", cap.last))
            if ov.dynamic:
                for driver, peer in self.drivers.conflicts(ctx.index, ov.weight, ov.dynamic):
                    found.append(("dynamicResources", f"{ctx.label} driver {driver}", peer))
        return found

    def store(self, ov: _Overlay) -> None:
        for ctx, positions in ov.matches:
            if ov.change is not None:
                slots = self.prices.setdefault(ctx.index, {})
                self.price_floor[ctx.index] = ov.weight
                for pos in positions:
                    key = ctx.offerings[pos].key
                    slot = slots.get(key)
                    if slot is None:
                        slots[key] = _PriceSlot(ov, ov.weight, ov)
                        ov.won += 1
                    else:
                        slot.lowest_weight, slot.last = ov.weight, ov
                        ov.lost += 1
                        ov.shadowed_by.add(slot.winner.name)
            if ov.has_capacity:
                cap = self.capacity.setdefault(ctx.index, _CapacitySlot())
                for name, qty in ov.capacity.items():
                    held = cap.keys.get(name)
                    if held is None:
                        cap.keys[name] = (ov, qty)
                        ov.won += 1
                        continue
                    holder, value = held
                    ov.lost += 1
                    ov.shadowed_by.add(holder.name)
                    if holder.weight == ov.weight and value != qty:  # D2: same weight, never flagged
                        ov.undetected.add(holder.name)
                        holder.undetected.add(ov.name)
                        self.undetected[(ov.name, holder.name)].append(f"{ctx.label} {name} {qty} (kept {value})")
                cap.lowest_weight, cap.last_keys, cap.last = ov.weight, frozenset(ov.capacity), ov
            if ov.dynamic:
                lost = self.drivers.store(ctx.index, ov.name, ov.weight, ov.dynamic)
                ov.won += len(ov.dynamic.drivers) - len(lost)
                ov.lost += len(lost)
                ov.shadowed_by.update(winner for _, winner in lost)

    def run(self) -> None:
        by_name = {ov.name: ov for ov in self.overlays}
        for ov in self.overlays:
            if ov.errors:
                ov.status = "RuntimeValidation"
                continue
            ov.matches = self.match(ov)
            found = self.conflicts(ov)
            if found:
                ov.status = "Conflict"
                ov.template_only_conflict = all(kind == "dynamicResources" for kind, _, _ in found)
                for kind, where, peer in found:
                    peer_name = peer if isinstance(peer, str) else peer.name
                    ov.conflict_slots.append((kind, where, peer_name))
                    ov.conflicts_with.add(peer_name)
                    if peer_name in by_name:
                        by_name[peer_name].conflicts_with.add(ov.name)
                continue
            self.store(ov)

    # -- results -----------------------------------------------------------------------------------

    def _base_offering(self, offering: _OfferingSlot) -> OfferingView:
        """An offering no overlay prices looks the same in every NodePool: build it once."""
        view = self._base_offerings.get(id(offering))
        if view is None:
            off = offering.offering
            view = self._base_offerings[id(offering)] = OfferingView.model_construct(
                zone=off.zone, capacity_type=off.capacity_type, base_price=off.price, price=off.price, overlay=None,
                available=off.available, requirements=offering.extra)
        return view

    def _base_capacity(self, it: InstanceType) -> tuple[dict[str, str], str | None]:
        cached = self._base_capacities.get(id(it))
        if cached is None:
            cached = self._base_capacities[id(it)] = (
                {k: str(v) for k, v in sorted(it.capacity.items())}, _allocatable_memory(it.capacity, it.overhead))
        return cached

    def effect(self, ctx: _Context, with_overlays: bool) -> tuple[InstanceTypeEffect, dict[str, str]]:
        offerings = []
        slots = self.prices.get(ctx.index, {}) if with_overlays else {}
        for offering in ctx.offerings:
            slot = slots.get(offering.key)
            if slot is None:
                offerings.append(self._base_offering(offering))
                continue
            view = self._priced_offerings.get((id(offering), id(slot.winner)))
            if view is None:  # the same overlay prices an instance type alike in every NodePool
                off = offering.offering
                change = slot.winner.change or ""
                if off.price is not None:
                    price: float | None = adjusted_price(change, off.price)
                else:
                    price = adjusted_price(change, 0.0) if is_absolute(change) else None
                view = self._priced_offerings[(id(offering), id(slot.winner))] = OfferingView.model_construct(
                    zone=off.zone, capacity_type=off.capacity_type, base_price=off.price, price=price,
                    overlay=slot.winner.name, available=off.available, requirements=offering.extra)
            offerings.append(view)
        capacity_text, memory = self._base_capacity(ctx.it)
        sources: dict[str, str] = {}
        replaced: dict[str, str] = {}
        cap = self.capacity.get(ctx.index) if with_overlays else None
        if cap is not None and cap.keys:
            capacity = dict(ctx.it.capacity)
            for name, (ov, qty) in sorted(cap.keys.items()):
                if name in capacity:
                    replaced[name] = str(capacity[name])
                capacity[name] = qty
                sources[name] = ov.name
            capacity_text = {k: str(v) for k, v in sorted(capacity.items())}
            memory = _allocatable_memory(capacity, ctx.it.overhead)
        slices: list[dict] = []
        if with_overlays:
            merged = self.drivers.merged(ctx.index)
            if merged:
                slices = predict_slices(ctx.it, ctx.pool, merged, ctx.node_labels())
        effect = InstanceTypeEffect.model_construct(
            offerings=offerings, capacity=capacity_text, capacity_overlays=sources, allocatable_memory=memory,
            resource_slices=slices)
        return effect, replaced

    def instance_type_views(self) -> list[InstanceTypeView]:
        views = []
        applies = self.gate_enabled is not False
        for ctx in self.contexts:
            effect, replaced = self.effect(ctx, with_overlays=applies)
            base_memory = self._base_capacity(ctx.it)[1]
            touched = ctx.index in self.capacity or ctx.index in self.prices or self.drivers.merged(ctx.index)
            if_enabled = None
            if not applies and touched:
                if_enabled, _ = self.effect(ctx, with_overlays=True)
            views.append(InstanceTypeView.model_construct(
                node_pool=ctx.pool.name, name=ctx.it.name, source=ctx.it.source, offerings=effect.offerings,
                capacity=effect.capacity, capacity_overlays=effect.capacity_overlays, replaced_capacity=replaced,
                allocatable_memory=effect.allocatable_memory,
                allocatable_memory_before_overlays=base_memory if base_memory != effect.allocatable_memory else None,
                resource_slices=effect.resource_slices, if_enabled=if_enabled))
        return views

    def overlay_views(self) -> list[OverlayView]:
        views = []
        for ov in self.overlays:
            views.append(OverlayView(
                name=ov.name, weight=ov.obj.spec.weight, order=ov.order, status=ov.status, message=self.message(ov),
                conflicts_with=sorted(ov.conflicts_with),
                matches=[ctx.match for ctx, _ in ov.matches],
                sets=ov.sets(), shadowed_by=sorted(ov.shadowed_by), undetected_conflicts_with=sorted(ov.undetected),
                errors=ov.errors, karpenter_status=karpenter_status(ov.obj)))
        return views

    def message(self, ov: _Overlay) -> str:
        if ov.status == "RuntimeValidation":
            return "; ".join(ov.errors)
        if ov.status == "Conflict":
            peers = ", ".join(sorted(ov.conflicts_with))
            return (f"conflict with {peers}: same weight {ov.weight}, and equal weights are processed by name "
                    f"descending, so {peers} went first; not applied anywhere")
        if not ov.matches:
            return "matches no instance type in any NodePool"
        pools = len({ctx.pool.name for ctx, _ in ov.matches})
        text = f"matches {plural(len(ov.matches), 'instance type')} in {plural(pools, 'NodePool')}"
        if ov.won == 0 and ov.lost:
            text += f"; no effect, every slot is held by {', '.join(sorted(ov.shadowed_by))}"
        if ov.conflicts_with:
            text += f"; rejected for conflicting with it: {', '.join(sorted(ov.conflicts_with))}"
        return text


def _allocatable_memory(capacity: dict[str, Quantity], overhead: dict[str, Quantity]) -> str | None:
    """Karpenter subtracts every ``hugepages-*`` capacity from allocatable memory (floor 0)."""
    memory = capacity.get("memory")
    if memory is None:
        return None
    value = memory - overhead["memory"] if "memory" in overhead else memory
    for name, qty in capacity.items():
        if name.startswith(HUGEPAGES_PREFIX):
            value = value - qty
    return "0" if value.sign() < 0 else str(value)
