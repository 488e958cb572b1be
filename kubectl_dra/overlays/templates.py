"""PROPOSAL ONLY: ResourceSlice templates on NodeOverlays (``spec.dynamicResources``).

Nothing here is Karpenter behaviour: the field comes from the unmerged NodeOverlay DRA RFC
(kubernetes-sigs/karpenter PR #2559 closed, PR #3285 open), and Karpenter's CRD prunes it today.
It is modelled so that a platform team can see what the proposal *would* publish and compare
that with the slices the DRA driver really publishes. Merging follows the RFC's recommended
keyed rule: per (NodePool, instance type, ``spec.driver``) the highest weight wins, an equal
weight on the same driver is a conflict, different drivers merge.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable

from kubectl_dra.model.base import to_quantity
from kubectl_dra.model.resource import ResourceSlice
from kubectl_dra.quantity import Quantity
from kubectl_dra.text import plural

MAX_DEVICES = 128
MAX_ATTRIBUTES_AND_CAPACITIES = 32
ATTRIBUTE_KINDS = ("int", "bool", "string", "version", "strings")


@dataclass(frozen=True)
class DeviceTemplate:
    name: str | None
    attributes: dict[str, Any]
    capacity: dict[str, Any]


@dataclass(frozen=True)
class SliceTemplate:
    name: str | None
    driver: str
    node_selector: dict | None
    all_nodes: bool
    devices: tuple[DeviceTemplate, ...]


@dataclass(frozen=True)
class AttributeBinding:
    """Devices that will share one runtime value for each listed attribute (e.g. a PCIe root)."""

    attributes: tuple[str, ...]
    devices: tuple[tuple[str, str], ...]  # (template name, device name)


@dataclass(frozen=True)
class DynamicResources:
    templates: tuple[SliceTemplate, ...] = ()
    bindings: tuple[AttributeBinding, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def drivers(self) -> frozenset[str]:
        return frozenset(t.driver for t in self.templates)

    def __bool__(self) -> bool:
        return bool(self.templates)


def _as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def parse_dynamic_resources(data: dict | None) -> DynamicResources:
    """Read the proposed field, tolerating the drafts' variations (``spec`` wrapper or not,
    ``metadata.name`` or none, selector key ``template`` or ``resourceSliceTemplate``)."""
    if not data:
        return DynamicResources()
    if not isinstance(data, dict):
        return DynamicResources(errors=("dynamicResources must be an object",))
    errors: list[str] = []
    templates: list[SliceTemplate] = []
    raw_templates = data.get("resourceSliceTemplates")
    if raw_templates is None:
        errors.append("dynamicResources.resourceSliceTemplates is required")
        raw_templates = []
    for i, raw in enumerate(raw_templates if isinstance(raw_templates, list) else []):
        where = f"resourceSliceTemplates[{i}]"
        raw = _as_dict(raw)
        name = _as_dict(raw.get("metadata")).get("name") or raw.get("name")
        spec = _as_dict(raw["spec"]) if "spec" in raw else raw
        driver = spec.get("driver")
        if not isinstance(driver, str) or not driver:
            errors.append(f"{where}: spec.driver is required")
            continue
        selector = spec.get("nodeSelector")
        if isinstance(selector, list):
            selector = {"nodeSelectorTerms": selector}
        if selector is not None:
            terms = _as_dict(selector).get("nodeSelectorTerms")
            if not isinstance(terms, list) or len(terms) != 1:
                errors.append(f"{where}: spec.nodeSelector must use exactly one term")
        all_nodes = bool(spec.get("allNodes"))
        if selector is not None and all_nodes:
            errors.append(f"{where}: spec.nodeSelector and spec.allNodes are mutually exclusive")
        devices = []
        raw_devices = spec.get("devices") or []
        if len(raw_devices) > MAX_DEVICES:
            errors.append(f"{where}: spec.devices: must have at most {MAX_DEVICES} items")
        for j, dev in enumerate(raw_devices if isinstance(raw_devices, list) else []):
            dev = _as_dict(dev)
            attributes, capacity = _as_dict(dev.get("attributes")), _as_dict(dev.get("capacity"))
            if len(attributes) + len(capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
                errors.append(f"{where}: spec.devices[{j}]: at most {MAX_ATTRIBUTES_AND_CAPACITIES} attributes "
                              "and capacities together")
            devices.append(DeviceTemplate(dev.get("name"), dict(attributes), dict(capacity)))
        templates.append(SliceTemplate(name, driver, selector, all_nodes, tuple(devices)))
    bindings: list[AttributeBinding] = []
    for i, raw in enumerate(data.get("attributeBindings") or []):
        raw = _as_dict(raw)
        attributes = tuple(a for a in raw.get("attributes") or [] if isinstance(a, str))
        refs = []
        for sel in raw.get("deviceSelectors") or []:
            sel = _as_dict(sel)
            template = sel.get("template", sel.get("resourceSliceTemplate"))
            refs.append((template, sel.get("device")))
        known = {(t.name, d.name) for t in templates for d in t.devices}
        missing = [f"{t}/{d}" for t, d in refs if (t, d) not in known]
        if missing:
            errors.append(f"attributeBindings[{i}]: no such template device {', '.join(missing)}")
        elif len(refs) < 2 or not attributes:
            errors.append(f"attributeBindings[{i}]: needs at least two devices and one attribute")
        else:
            bindings.append(AttributeBinding(attributes, tuple(refs)))
    return DynamicResources(tuple(templates), tuple(bindings), tuple(errors))


@dataclass
class MergedDriver:
    """The templates one driver gets on one (NodePool, instance type): from the winning overlay."""

    driver: str
    overlay: str
    weight: int
    templates: tuple[SliceTemplate, ...]
    bindings: tuple[tuple[int, AttributeBinding], ...] = ()  # the overlay's bindings touching these templates


@dataclass
class _Slot:
    winner: MergedDriver
    lowest_weight: int
    last: str


class DriverSlots:
    """First writer wins per (context, driver); equal weight on a claimed driver is a conflict.

    Callers process overlays in Karpenter's order (weight descending, then name descending), check
    ``conflicts`` for the whole overlay first and ``store`` only when there is none, as Karpenter
    does for price and capacity.
    """

    def __init__(self) -> None:
        self._slots: dict[Hashable, dict[str, _Slot]] = {}

    def conflicts(self, context: Hashable, weight: int, resources: DynamicResources) -> list[tuple[str, str]]:
        """(driver, overlay already holding it at this weight) pairs."""
        found = []
        slots = self._slots.get(context, {})
        for driver in sorted(resources.drivers):
            slot = slots.get(driver)
            if slot is not None and slot.lowest_weight == weight:
                found.append((driver, slot.last))
        return found

    def store(self, context: Hashable, overlay: str, weight: int, resources: DynamicResources) -> list[tuple[str, str]]:
        """Record the overlay; returns (driver, winning overlay) for drivers it did not win."""
        lost = []
        slots = self._slots.setdefault(context, {})
        for driver in sorted(resources.drivers):
            slot = slots.get(driver)
            if slot is None:
                templates = tuple(t for t in resources.templates if t.driver == driver)
                names = {t.name for t in templates}
                bindings = tuple((i, b) for i, b in enumerate(resources.bindings)
                                 if any(t in names for t, _ in b.devices))
                slots[driver] = _Slot(MergedDriver(driver, overlay, weight, templates, bindings), weight, overlay)
            else:
                slot.lowest_weight, slot.last = weight, overlay
                lost.append((driver, slot.winner.overlay))
        return lost

    def merged(self, context: Hashable) -> dict[str, MergedDriver]:
        return {driver: slot.winner for driver, slot in sorted(self._slots.get(context, {}).items())}


def merge_templates(entries: Iterable[tuple[str, int | None, DynamicResources]]
                    ) -> tuple[dict[str, MergedDriver], list[tuple[str, str, str]]]:
    """Merge the templates of overlays that all match one (NodePool, instance type).

    Returns the merged drivers and the conflicts as (rejected overlay, peer, driver); a rejected
    overlay contributes nothing (rejection is atomic).
    """
    ordered = sorted(sorted(entries, key=lambda e: e[0], reverse=True), key=lambda e: -(e[1] or 0))
    slots = DriverSlots()
    conflicts = []
    for name, weight, resources in ordered:
        if not resources:
            continue
        clash = slots.conflicts(None, weight or 0, resources)
        if clash:
            conflicts.extend((name, peer, driver) for driver, peer in clash)
            continue
        slots.store(None, name, weight or 0, resources)
    return slots.merged(None), conflicts


# -- prediction -----------------------------------------------------------------------------------

def _resolve_selector(selector: dict, node_labels: dict[str, str]) -> tuple[dict, list[str]]:
    """Replace each term's ``matchLabelKeys`` by ``In [<the node's value>]`` expressions."""
    unresolved: list[str] = []
    terms = []
    for term in _as_dict(selector).get("nodeSelectorTerms") or []:
        term = dict(_as_dict(term))
        expressions = list(term.get("matchExpressions") or [])
        for key in term.pop("matchLabelKeys", None) or []:
            if key in node_labels:
                expressions.append({"key": key, "operator": "In", "values": [node_labels[key]]})
            else:
                unresolved.append(key)
        if expressions:
            term["matchExpressions"] = expressions
        terms.append(term)
    return {"nodeSelectorTerms": terms}, unresolved


def predict_slices(instance_type: Any, nodepool: Any, merged: dict[str, MergedDriver],
                   node_labels: dict[str, str], node_name: str | None = None) -> list[dict]:
    """ResourceSlice-shaped specs the proposal would publish for one node (all marked proposal).

    Node-local templates (no selector) get ``nodeName``; the pool is named after the node, as
    node-local DRA drivers do. ``node_name`` is None when predicting for an instance type rather
    than a concrete node.
    """
    it_name = getattr(instance_type, "name", instance_type)
    pool_name = getattr(nodepool, "name", nodepool)
    # A binding holds only if every template it names was won by its overlay (drivers merge
    # independently, so a GPU+NIC binding breaks when another overlay wins the NIC driver).
    active = {(entry.overlay, t.name) for entry in merged.values() for t in entry.templates}
    binding_ids: dict[tuple[str, str | None, str | None], dict[str, str]] = defaultdict(dict)
    for entry in merged.values():
        for i, binding in entry.bindings:
            if all((entry.overlay, t) in active for t, _ in binding.devices):
                for t, d in binding.devices:
                    for attribute in binding.attributes:
                        binding_ids[(entry.overlay, t, d)][attribute] = f"{entry.overlay}#{i}"
    slices = []
    for driver, entry in sorted(merged.items()):
        for template in entry.templates:
            spec: dict[str, Any] = {
                "driver": driver,
                "pool": {"name": node_name, "resourceSliceCount": len(entry.templates)},
            }
            if template.all_nodes:
                spec["allNodes"] = True
            elif template.node_selector is not None:
                spec["nodeSelector"], unresolved = _resolve_selector(template.node_selector, node_labels)
                if unresolved:
                    spec["unresolvedMatchLabelKeys"] = unresolved
            else:
                spec["nodeName"] = node_name
            devices = []
            for dev in template.devices:
                device: dict[str, Any] = {"name": dev.name, "attributes": dict(dev.attributes),
                                          "capacity": dict(dev.capacity)}
                bound = binding_ids.get((entry.overlay, template.name, dev.name))
                if bound:
                    device["boundAttributes"] = dict(bound)
                devices.append(device)
            spec["devices"] = devices
            spec.update(proposal=True, overlay=entry.overlay, template=template.name,
                        nodePool=pool_name, instanceType=it_name)
            slices.append(spec)
    return slices


# -- comparison with what the driver published ----------------------------------------------------

def _attribute_value(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, dict):
        for kind in ATTRIBUTE_KINDS:
            if value.get(kind) is not None:
                return kind, tuple(value[kind]) if kind == "strings" else value[kind]
        return None
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int", value
    if isinstance(value, str):
        return "string", value
    return None


def _capacity_value(value: Any) -> Quantity | None:
    raw = value.get("value") if isinstance(value, dict) else value
    try:
        return to_quantity(raw)
    except ValueError:
        return None


def _qualify(driver: str, name: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _show(value: tuple[str, Any] | None) -> str:
    return "missing" if value is None else f"{value[0]} {value[1]!r}"


@dataclass
class _Device:
    name: str | None
    attributes: dict[str, tuple[str, Any] | None]
    capacity: dict[str, Quantity | None]
    bound: dict[str, str] = field(default_factory=dict)


def _predicted_devices(slices: list[dict]) -> dict[str, list[_Device]]:
    by_driver: dict[str, list[_Device]] = defaultdict(list)
    for spec in slices:
        driver = spec["driver"]
        for dev in spec.get("devices") or []:
            by_driver[driver].append(_Device(
                dev.get("name"),
                {_qualify(driver, k): _attribute_value(v) for k, v in (dev.get("attributes") or {}).items()},
                {_qualify(driver, k): _capacity_value(v) for k, v in (dev.get("capacity") or {}).items()},
                {_qualify(driver, k): v for k, v in (dev.get("boundAttributes") or {}).items()}))
    return by_driver


def _published_devices(published: Iterable[ResourceSlice | dict]) -> dict[str, list[_Device]]:
    by_driver: dict[str, list[_Device]] = defaultdict(list)
    for rs in published:
        if isinstance(rs, dict):
            rs = ResourceSlice.from_raw(rs)
        driver = rs.spec.driver
        by_driver.setdefault(driver, [])
        for dev in rs.spec.devices:
            attributes = {}
            for k, attr in dev.attributes.items():
                dumped = attr.model_dump(by_alias=True, exclude_none=True)
                attributes[_qualify(driver, k)] = _attribute_value(dumped)
            capacity = {_qualify(driver, k): c.value for k, c in dev.capacity.items()}
            by_driver[driver].append(_Device(dev.name, attributes, capacity))
    return by_driver


def _differences(driver: str, label: str, want: _Device, got: _Device) -> list[str]:
    out = []
    for key, value in want.attributes.items():
        if key in want.bound:
            continue  # bound attributes get their value at runtime; checked across devices below
        if got.attributes.get(key) != value:
            out.append(f"driver {driver}: device {label} attribute {key}: predicted {_show(value)}, "
                       f"published {_show(got.attributes.get(key))}")
    for key, value in want.capacity.items():
        have = got.capacity.get(key)
        if have is None or value is None or have != value:
            out.append(f"driver {driver}: device {label} capacity {key}: predicted {value}, "
                       f"published {have if have is not None else 'missing'}")
    return out


def compare_slices(predicted: list[dict], published_slices: Iterable[ResourceSlice | dict]) -> list[str]:
    """What differs between predicted slices and the node's published ones (empty: they agree).

    Named devices are compared by name, unnamed ones are paired with a published device that
    matches all their attributes and capacity. Published attributes the template does not
    mention are fine: templates only describe what scheduling needs.
    """
    want = _predicted_devices(predicted)
    have = _published_devices(published_slices)
    problems: list[str] = []
    groups: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)  # bindings span drivers
    for driver in sorted(set(want) | set(have)):
        if driver not in have:
            problems.append(f"driver {driver}: no ResourceSlice published (the overlay templates predict "
                            f"{plural(len(want[driver]), 'device')})")
            continue
        if driver not in want:
            problems.append(f"driver {driver}: publishes {plural(len(have[driver]), 'device')} no overlay template predicts")
            continue
        published = {d.name: d for d in have[driver]}
        used: set[str | None] = set()
        pairs: list[tuple[_Device, _Device]] = []
        for dev in (d for d in want[driver] if d.name):
            got = published.get(dev.name)
            if got is None:
                problems.append(f"driver {driver}: device {dev.name} predicted but not published")
                continue
            used.add(dev.name)
            pairs.append((dev, got))
            problems.extend(_differences(driver, dev.name, dev, got))
        unmatched = 0
        for dev in (d for d in want[driver] if not d.name):
            got = next((g for g in have[driver] if g.name not in used and not _differences(driver, "", dev, g)), None)
            if got is None:
                unmatched += 1
            else:
                used.add(got.name)
                pairs.append((dev, got))
        if unmatched:
            problems.append(f"driver {driver}: {plural(unmatched, 'unnamed predicted device')} "
                            f"{'matches' if unmatched == 1 else 'match'} no published device")
        for dev, got in pairs:
            for attribute, binding in dev.bound.items():
                groups[(binding, attribute)].append((f"{driver}/{got.name}", got.attributes.get(attribute)))
    for (binding, attribute), members in sorted(groups.items()):
        if len({value for _, value in members}) > 1 or any(value is None for _, value in members):
            shown = ", ".join(f"{name}={_show(value)}" for name, value in members)
            problems.append(f"attribute binding {binding} expects one shared {attribute}, published {shown}")
    return problems
