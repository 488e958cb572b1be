"""NodeResourcesFit's PreFilter and Filter, as kube-scheduler v1.37.2 runs them
(pkg/scheduler/framework/plugins/noderesources/fit.go), with the numbers behind every reason.

What it compares: the pod's spec requests (sidecar-aware, pod-level resources over them, plus the
RuntimeClass overhead; never the KEP-5517 DRA amounts, which are DynamicResources' check) against
``allocatable - requested`` of the node, where ``requested`` is what the pods already there count
for in the scheduler's cache. The rules, in the order the reasons come out:

1. "Too many pods" when the node already holds ``allocatable pods`` pods (whatever the pod asks).
2. A request of zero never fails for that resource, however overcommitted the node is.
3. cpu, memory, ephemeral-storage, then every other (scalar) resource the pod asks for: huge
   pages, extended resources, ``*kubernetes.io/`` ones; a resource the node does not list has
   allocatable 0. Go walks the scalars in map order (random); here they go by name (the
   scheduler's message sorts its reasons, so nothing a user sees depends on it).
4. Extended resources named in the args' ``ignoredResources`` or whose prefix (before the "/") is
   in ``ignoredResourceGroups`` are not checked (huge pages and ``kubernetes.io`` names cannot be).
5. DRA extended resources: a resource the node does not advertise (allocatable 0) that a
   DeviceClass provides (its ``spec.extendedResourceName``, or the implicit
   ``deviceclass.resource.kubernetes.io/<class>``) is left to DynamicResources.
6. UnschedulableAndUnresolvable when some request is larger than the node's whole allocatable
   (preemption cannot help), else Unschedulable; "Too many pods" alone is never unresolvable.

:func:`fits_resources` is the comparison, shared with the DynamicResources plugin's
node-allocatable check (``nodeFitsResources``), which has its own rules (``dra=True``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.extended import class_resolver
from kubectl_dra.scheduling.framework import (UNRESOLVABLE, UNSCHEDULABLE, Cycle, Evidence, NodeInfo, Plugin,
                                              PreFilterResult, Resource, Status)
from kubectl_dra.scheduling.resources import (CPU, DEVICE_CLASS_PREFIX, EPHEMERAL_STORAGE, MEMORY, PODS,
                                              IncomingRequest, format_amount, incoming_requests,
                                              is_extended_resource_name, is_hugepages, unreadable_resource_fields)
from kubectl_dra.versions import SCHEDULER, older

NAME = "NodeResourcesFit"

# The reasons, pkg/scheduler/framework/plugins/noderesources/fit.go (fitsRequest); the same words in
# pkg/scheduler/framework/plugins/dynamicresources/nodeallocatabledynamicresources.go (nodeFitsResources).
TOO_MANY_PODS = "Too many pods"
INSUFFICIENT = "Insufficient {}"  # fmt.Sprintf("Insufficient %v", rName)
INSUFFICIENT_CPU = INSUFFICIENT.format(CPU)
INSUFFICIENT_MEMORY = INSUFFICIENT.format(MEMORY)
INSUFFICIENT_EPHEMERAL_STORAGE = INSUFFICIENT.format(EPHEMERAL_STORAGE)

_BASIC = (CPU, MEMORY, EPHEMERAL_STORAGE)


class Undecided(Exception):
    """The comparison depends on something this tool could not read."""


@dataclasses.dataclass(frozen=True, slots=True)
class Insufficient:
    """fit.go ``InsufficientResource``: one resource the node is short of, in the scheduler's units."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False

    def evidence(self, *, overhead: Resource | None = None, dra: Resource | None = None) -> Evidence:
        """The numbers behind the reason; ``overhead``/``dra``: the parts of the request that came
        from spec.overhead and from the claims' node-allocatable mappings (shown when non-zero)."""
        def part(amounts: Resource | None) -> str | None:
            amount = (amounts or {}).get(self.resource, 0)
            return format_amount(self.resource, amount) if amount else None

        return Evidence(reason=self.reason, resource=self.resource,
                        requested=format_amount(self.resource, self.requested),
                        dra=part(dra), overhead=part(overhead),
                        allocatable=format_amount(self.resource, self.capacity),
                        used=format_amount(self.resource, self.used))


def fits_resources(request: Resource, node: NodeInfo, *, dra: bool = False,
                   ignored_resources: Iterable[str] = (), ignored_groups: Iterable[str] = (),
                   delegated: Callable[[str], bool | str] | None = None) -> list[Insufficient]:
    """What ``node`` is short of for ``request``, in the order the scheduler lists the reasons.

    ``dra=False``: NodeResourcesFit's ``fitsRequest``: the pod count, a zero request never fails,
    every scalar resource, the args' ignored extended resources, and ``delegated(name)`` (is this
    resource, which the node does not advertise, provided by a DeviceClass? a string: why that
    cannot be told, which raises :class:`Undecided`).

    ``dra=True``: DynamicResources' ``nodeFitsResources`` for the pod's total with its claims'
    node-allocatable amounts: no pod count, and of the scalars only huge pages, compared even at
    zero (so a zero huge-page request fails on a node already overcommitted in it).
    """
    allocatable, requested = node.allocatable, node.requested
    out: list[Insufficient] = []
    if not dra:
        allowed = allocatable.get(PODS, 0)
        if len(node.pods) + 1 > allowed:
            out.append(Insufficient(PODS, TOO_MANY_PODS, 1, len(node.pods), allowed))
    for name in _BASIC:
        want = request.get(name, 0)
        have, used = allocatable.get(name, 0), requested.get(name, 0)
        if want > 0 and want > have - used:
            out.append(Insufficient(name, INSUFFICIENT.format(name), want, used, have, want > have))
    ignored, groups = frozenset(ignored_resources), frozenset(ignored_groups)
    for name in sorted(n for n in request if n not in _BASIC and n != PODS):
        want = request[name]
        have, used = allocatable.get(name, 0), requested.get(name, 0)
        if dra:
            if not is_hugepages(name) or want <= have - used:
                continue
        else:
            if want == 0:
                continue
            if (ignored or groups) and is_extended_resource_name(name) and (
                    name in ignored or name.split("/", 1)[0] in groups):
                continue
            if have <= 0 and delegated is not None:  # shouldDelegateResourceToDRA
                verdict = delegated(name)
                if isinstance(verdict, str):
                    raise Undecided(verdict)
                if verdict:
                    continue
            if want <= have - used:
                continue
        out.append(Insufficient(name, INSUFFICIENT.format(name), want, used, have, want > have))
    return out


def insufficient_status(items: list[Insufficient], *, plugin: str, overhead: Resource | None = None,
                        dra: Resource | None = None) -> Status:
    """The Filter status for ``items`` (none: success): every reason kept, Unresolvable if any is."""
    if not items:
        return Status(plugin=plugin)
    status = Status.unschedulable(*(i.reason for i in items),
                                  evidence=[i.evidence(overhead=overhead, dra=dra) for i in items],
                                  unresolvable=any(i.unresolvable for i in items))
    status.plugin = plugin
    return status


# -- DRA extended resources ---------------------------------------------------------------------------

def _delegation(cycle: Cycle) -> Callable[[str], bool | str]:
    """``shouldDelegateResourceToDRA``'s class lookup over the cycle's DeviceClasses (read lazily:
    only a scalar resource a node does not advertise asks)."""
    cache: dict[str, dict[str, bool | None] | None] = {}

    def delegated(name: str) -> bool | str:
        if older(SCHEDULER, "DRAExtendedResource", cycle.release):  # off: the node's allocatable decides
            return False
        if "map" not in cache:
            inv = cycle.inventory
            classes = inv.all(DeviceClass) if inv is not None else []
            known = inv is not None and (bool(classes) or "DeviceClass" in inv.read_kinds)
            cache["map"] = class_resolver(classes) if known else None
        mapped = cache["map"]
        if mapped is None:
            return (f"whether a DeviceClass provides extended resource {name}, which the node does not "
                    "advertise, is unknown: DeviceClasses were not read")
        if name not in mapped:
            return False
        if mapped[name] is None:
            return (f"whether the scheduler maps {name} to its DeviceClass depends on the order it saw the "
                    "classes in: that class lost an extendedResourceName clash to a newer one")
        return True

    return delegated


# -- the plugin ---------------------------------------------------------------------------------------

@dataclasses.dataclass(slots=True)
class FitState:
    """PreFilter's result: the pod's request (or why it is unknown) and the args' ignore lists."""

    request: IncomingRequest | None = None
    problem: str | None = None
    ignored_resources: frozenset[str] = frozenset()
    ignored_groups: frozenset[str] = frozenset()
    delegated: Callable[[str], bool | str] | None = None


def _string_list(args: dict, key: str) -> frozenset[str] | None:
    value = args.get(key)
    if value is None:
        return frozenset()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return None


class NodeResourcesFit(Plugin):
    """fit.go's ``Fit`` as a filter (scoring is not modelled: it never makes a pod Pending)."""

    NAME = NAME

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        state = FitState(delegated=_delegation(cycle))
        args = cycle.args.get(NAME) or {}
        ignored = _string_list(args, "ignoredResources") if isinstance(args, dict) else None
        groups = _string_list(args, "ignoredResourceGroups") if isinstance(args, dict) else None
        bad = unreadable_resource_fields(pod, cached=False)
        if ignored is None or groups is None:
            state.problem = ("the NodeResourcesFit args' ignoredResources/ignoredResourceGroups are not lists of "
                             "strings")
        elif bad:
            state.problem = f"pod {pod.key}: what it requests is unknown (invalid {', '.join(bad)})"
        else:
            state.request = incoming_requests(pod)
            state.ignored_resources, state.ignored_groups = ignored, groups
        return PreFilterResult(state=state)

    def filter(self, cycle: Cycle, state: FitState, node: NodeInfo) -> Status:
        if state.problem is not None or state.request is None:
            return Status.unknown(state.problem or "NodeResourcesFit: PreFilter did not run")
        bad_allocatable = node.node.invalid_under("status.allocatable")
        if bad_allocatable:
            return Status.unknown(f"node {node.name}: its allocatable is unknown (invalid "
                                  f"{', '.join(bad_allocatable)})")
        total = state.request.total
        try:
            items = fits_resources(total, node, ignored_resources=state.ignored_resources,
                                   ignored_groups=state.ignored_groups, delegated=state.delegated)
        except Undecided as exc:
            return Status.unknown(f"node {node.name}: {exc}")
        if any(v > 0 for v in total.values()):  # beyond the pod count, the bound pods' sums matter
            for info in node.pods:
                unknown = unreadable_resource_fields(info.pod, cached=True)
                if unknown:
                    return Status.unknown(f"node {node.name}: what pod {info.pod.key} requests there is unknown "
                                          f"(invalid {', '.join(unknown)})")
        return insufficient_status(items, plugin=NAME, overhead=state.request.overhead)
