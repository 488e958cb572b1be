"""The scheduler's DRA allocation for one node, reproduced and explained.

Follows the allocator kube-scheduler 1.37 uses by default ("incubating" in
k8s.io/dynamic-resource-allocation structured/internal @ v0.37.2, chosen because the 1.37 default
gates enable binding conditions and consumable capacity): one depth-first pass over all of a
pod's unallocated claims in order, requests in spec order, devices in pool/slice/device order,
``firstAvailable`` subrequests in order, the first complete solution wins; within a request only
combinations in device order are tried. Per device, in the allocator's order (``Allocator._refusal``,
which the explanation asks too): in use, binding conditions, class selectors, request selectors,
per-device node selection, capacity, counters, taints, then the claim's constraints. A CEL error, an ``All`` request that sees an incomplete or invalid pool, or a
constraint broken in ``All`` mode is an error for the whole node (the scheduler reports an Error,
not "unschedulable").

Besides the decision, every request gets its candidates and each rejected device one reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

from kubectl_dra.allocation.cel import (COST_ERROR, CELBeyondEvaluator, CELError, compile_selector, evaluate,
                                        quantity_value, semver_value)
from kubectl_dra.allocation.bound import SURE, SearchBound, timeout_words
from kubectl_dra.allocation.gather import Gathered, Pool, node_matches
from kubectl_dra.allocation.state import AllocatedState
from kubectl_dra.model.node import Node
from kubectl_dra.model.claim import DeviceToleration, ExactDeviceRequest, ResourceClaim
from kubectl_dra.model.resource import Device, DeviceClass, DeviceTaint, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError
from kubectl_dra.quantity import Quantity
from kubectl_dra.taints.rules import RuleTaints
from kubectl_dra.taints.tolerations import tolerates

MAX_RESULTS = 32  # AllocationResultsMaxSize
DEFAULT_FEATURES = frozenset({"adminAccess", "prioritizedList", "partitionableDevices", "deviceTaints",
                              "consumableCapacity", "bindingConditions"})
"""What kube-scheduler 1.37 enables by default (DRAAdminAccess, DRAPrioritizedList, DRADeviceTaints GA;
DRAPartitionableDevices, DRAConsumableCapacity, DRADeviceBindingConditions beta, on)."""


class Undetermined(Exception):
    """Something this tool cannot evaluate (a CEL function it lacks): no verdict on the node.
    ``possible_error``: the Error the scheduler reports there in one of the cases this tool cannot
    tell apart (a selector past its cost limit)."""

    def __init__(self, message: str, possible_error: str | None = None):
        super().__init__(message)
        self.possible_error = possible_error


class AllocationError(Exception):
    """What makes the scheduler fail the node with an Error (not "unschedulable")."""


class _MaxSize(Exception):
    pass


class _Stopped(Exception):
    """The search reached its deadline (bound.py); ``cut``: one shortened by the command's total."""

    def __init__(self, cut: bool):
        super().__init__("stopped")
        self.cut = cut


# refusals that do not depend on what the search has taken: a device refused so is skipped for
# that request for the rest of the search (upstream caches the selector part, deviceMatchesRequest)
_STATIC = frozenset({"BindingConditions", "DeviceClassSelector", "RequestSelector", "NodeSelection", "Taint"})
_TICK = 255  # the deadline is read every 256 steps


@dataclass(slots=True)
class Rejection:
    device: str
    reason: str
    message: str = ""


@dataclass(slots=True)
class RequestDiagnosis:
    claim: str  # namespace/name
    request: str  # "req" or "req/sub"
    wanted: str = ""  # "1", "2", "all"
    candidates: list[str] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


@dataclass(slots=True)
class Pick:
    claim: str
    request: str
    driver: str
    pool: str
    device: str
    shared: bool = False  # a share of a device that allows multiple allocations (gets a shareID)
    consumed: dict = field(default_factory=dict)  # its consumedCapacity (every capacity of the device)


@dataclass(slots=True)
class NodeOutcome:
    node: str
    feasible: bool
    results: list[Pick] = field(default_factory=list)
    requests: list[RequestDiagnosis] = field(default_factory=list)
    error: str | None = None  # the scheduler's Error for this node, when there is one
    undetermined: str | None = None  # this tool cannot tell (and says why); never a verdict
    proof: str | None = None  # infeasible without the search: a request has fewer candidates than it needs
    possible_error: str | None = None  # the scheduler's Error here in a case this tool cannot tell apart
    timing: str | None = None  # how the search's length bears on the scheduler's answer, for a person
    steps: int = 0  # search steps (allocateOne calls upstream), and the seconds they took here
    seconds: float = 0.0


def _domain_maps(device: Device, driver: str) -> tuple[dict, dict]:
    attributes: dict[str, dict] = {}
    for name, attribute in device.attributes.items():
        domain, _, ident = name.partition("/") if "/" in name else (driver, "", name)
        value = attribute.value
        if value is None:
            raise ValueError(f"attribute {name}: unsupported attribute value")
        if attribute.version is not None:
            value = semver_value(attribute.version)
        elif attribute.versions is not None:
            value = [semver_value(v) for v in attribute.versions]
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict] = {}
    for name, cap in device.capacity.items():
        domain, _, ident = name.partition("/") if "/" in name else (driver, "", name)
        capacity.setdefault(domain, {})[ident] = quantity_value(cap.value)
    return attributes, capacity


@dataclass(slots=True)
class _Request:
    """One request or ``firstAvailable`` subrequest of a claim as the search fills it (upstream's
    ``requestData``): how many devices, and for ``All`` which ones."""
    claim_index: int
    claim: str
    name: str  # "req" or "req/sub"
    parent: str | None
    spec: ExactDeviceRequest
    class_: DeviceClass | None
    count: int = 1
    all_mode: bool = False
    all_devices: list = field(default_factory=list)  # (pool, slice, device) an All request takes


@dataclass(slots=True)
class _Attempt:
    """What a search has taken so far on top of the cluster's allocations (upstream's
    ``allocatingDevices``, ``allocatingCapacity`` and ``consumedCounters``)."""
    picked: dict[tuple, set[int]] = field(default_factory=dict)  # device -> claims (indices) taking it whole
    capacity: dict[tuple, dict[str, Quantity]] = field(default_factory=dict)  # shareable device -> its shares' use
    counters: dict = field(default_factory=dict)  # pool key -> counter set -> counter -> consumed


class _SelectionFailed(AllocationError):
    """A selector's CEL or a node selector failed on a device: an Error for the search, the
    device's reason in the explanation."""


def _variants(request) -> list[tuple[str, str | None, ExactDeviceRequest]]:
    """(name, parent, spec) of a request: itself, or each firstAvailable subrequest as "req/sub"."""
    if request.exactly is not None:
        return [(request.name, None, request.exactly)]
    return [(f"{request.name}/{s.name}", request.name, s) for s in request.first_available]


def _claim_name(claim: ResourceClaim) -> str:
    """How the scheduler names a claim in its messages (klog.KObj): namespace/name."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


def _unreadable_request(claims: list[ResourceClaim], classes: dict[str, DeviceClass]) -> str | None:
    """The first field of what the claims ask for (their requests, selectors, tolerations and
    constraints, their classes' selectors) that did not validate when it was read: what it would
    have allowed or forbidden is unknown."""
    for claim in claims:
        if claim.invalid_fields and (paths := claim.invalid_under("spec.devices")):
            return f"ResourceClaim {claim.key}: {paths[0]} did not validate"
    for claim in claims:
        for request in claim.spec.devices.requests:
            for _, _, spec in _variants(request):
                klass = classes.get(spec.device_class_name)
                if klass is not None and klass.invalid_fields and (paths := klass.invalid_under("spec.selectors")):
                    return f"DeviceClass {klass.name}: {paths[0]} did not validate"
    return None


def _proof(requests: list[list[list[_Request]]], diagnoses: list[RequestDiagnosis]) -> str | None:
    """Why no allocation exists on the node without searching, or None: a request (every
    alternative of a ``firstAvailable`` one) with fewer candidates than devices it needs. Sound
    because the search only ever refuses more devices than a fresh attempt does, and takes a
    device at most once per request. Not given when a device's check failed or cannot be
    evaluated: the scheduler's search may stop at that device with an Error first."""
    if any(x.reason == "Undetermined" or x.message.startswith("failed: ") for d in diagnoses for x in d.rejected):
        return None
    found = iter(diagnoses)
    for per_claim in requests:
        for alternatives in per_claim:
            mine = [next(found) for _ in alternatives]
            if all(not r.all_mode and len(d.candidates) < r.count for r, d in zip(alternatives, mine)):
                shown = "; ".join(f"request {d.request} of {d.claim} needs {r.count}, {len(d.candidates)} "
                                  f"qualif{'ies' if len(d.candidates) == 1 else 'y'}" for r, d in zip(alternatives, mine))
                return shown if len(mine) == 1 else f"no subrequest can be met ({shown})"
    return None


def _tolerated(taint: DeviceTaint, tolerations: list[DeviceToleration]) -> bool:
    return any(tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations)


def _blocking_taint(device: Device, tolerations: list[DeviceToleration]) -> DeviceTaint | None:
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
            return taint
    return None


INT64_MAX = (1 << 63) - 1


class _RangeError(Exception):
    """A capacity request the device's range arithmetic cannot represent (an allocation error)."""


def _policy_amount(requested: Quantity | None, cap, fractional: bool = False) -> Quantity:
    """``calculateConsumedCapacity``: the default or full value when nothing is asked, rounded up to
    the policy's range step or next valid value (integer arithmetic, or milli with
    DRAFractionalCapacityRange when min/max/step are exact in milli and the step is >= 1m)."""
    policy = cap.request_policy
    if requested is None:
        default = policy.default if policy else None
        return default if default is not None else cap.value
    valid_range = policy.valid_range if policy else None
    if valid_range and valid_range.min is not None:
        low = valid_range.min
        if requested < low:
            return low
        step_q = valid_range.step
        if step_q is None:
            return requested
        bounds = [low, step_q] + ([valid_range.max] if valid_range.max is not None else [])
        milli = fractional and all(q.as_fraction() * 1000 == int(q.as_fraction() * 1000) for q in bounds) \
            and step_q.as_fraction() >= Fraction(1, 1000)
        scale = 1000 if milli else 1
        def scaled(q: Quantity) -> int:  # Value() / MilliValue(): rounded up
            v = q.as_fraction() * scale
            return -(-v.numerator // v.denominator)

        req_i = scaled(requested)
        if req_i > INT64_MAX:
            raise _RangeError(f"request {req_i} exceeds MaxInt64")
        low_v, step_v = scaled(low), scaled(step_q)
        if step_v <= 0:
            return requested
        steps = -(-(req_i - low_v) // step_v)
        rounded = low_v + step_v * steps
        if rounded > INT64_MAX:
            raise _RangeError(f"rounding request {req_i} up to the next step passes MaxInt64")
        return Quantity.from_milli(rounded) if milli else Quantity.from_int(rounded)
    values = sorted(policy.valid_values) if policy else []
    for value in values:
        if value >= requested:
            return value
    return requested


def _violates(consumed: Quantity, cap) -> bool:
    policy = cap.request_policy
    if policy is None:
        return False
    if policy.default is not None and consumed == policy.default:
        return False
    valid_range = policy.valid_range
    if valid_range and valid_range.min is not None:
        if valid_range.max is not None and consumed > valid_range.max:
            return True
        if valid_range.step is not None:
            step_v = valid_range.step.value()
            return step_v > 0 and (consumed.value() - valid_range.min.value()) % step_v != 0
        return False
    if policy.valid_values:
        return all(consumed != v for v in policy.valid_values)
    return False


class Allocator:
    """One pod's (or one claim's) allocation problem over the cluster's slices."""

    def __init__(self, claims: list[ResourceClaim], classes: dict[str, DeviceClass], state: AllocatedState,
                 features: frozenset[str] = DEFAULT_FEATURES, rule_taints: RuleTaints | None = None,
                 bound: SearchBound | None = None):
        self.features = features
        self.bound = bound or SearchBound()
        self.rule_taints = rule_taints or RuleTaints()  # what DeviceTaintRules do to new allocations
        self.claims = claims
        self.classes = classes
        self.state = state
        self._cel_devices: dict[int, dict] = {}
        self._selectable: dict[tuple, tuple[bool, str, str]] = {}
        self._available: dict[str, dict[str, dict[str, Quantity]]] = {}

    # -- per device -----------------------------------------------------------------------------

    def _multi(self, device: Device) -> bool:
        return bool(device.allow_multiple_allocations) and "consumableCapacity" in self.features

    def _taint(self, pool: Pool, device: Device, tolerations: list[DeviceToleration]):
        """The first taint that keeps the request off the device: the driver's, then the rules' (the
        scheduler's slice tracker adds DeviceTaintRule taints to the devices they select). When none
        does and a rule that cannot be evaluated may select the device, whether it may be taken is
        unknown: Undetermined, never a guess (taints/rules.py), unless the request tolerates every
        taint (``operator: Exists`` without key or effect)."""
        if "deviceTaints" not in self.features:
            return None
        found = _blocking_taint(device, tolerations)
        if found is None:
            key = (pool.driver, pool.name, device.name)
            found = next((t for t in self.rule_taints.taints.get(key, ()) if t.effect in ("NoSchedule", "NoExecute")
                          and not _tolerated(t, tolerations)), None)
            if found is None and (rule := self.rule_taints.unknown(key)) is not None and \
                    not any(t.operator == "Exists" and not t.key and not t.effect for t in tolerations):
                raise Undetermined(f"device {pool.key}/{device.name}: {rule.message}")
        return found

    def _cel_device(self, pool: Pool, device: Device) -> dict:
        key = id(device)
        cached = self._cel_devices.get(key)
        if cached is None:
            try:
                attributes, capacity = _domain_maps(device, pool.driver)
                invalid = None
            except ValueError as exc:  # an invalid attribute fails every evaluation on the device
                attributes, capacity, invalid = {}, {}, str(exc)
            cached = {"driver": pool.driver, "attributes": attributes, "capacity": capacity,
                      "allowMultipleAllocations": bool(device.allow_multiple_allocations)}
            if invalid:
                cached["_invalid"] = invalid
            self._cel_devices[key] = cached
        return cached

    def _selectors(self, request: _Request, pool: Pool, device: Device) -> tuple[bool, str, str]:
        """(selectable, reason, message); a CEL failure raises AllocationError."""
        key = (id(device), request.claim_index, request.name)
        cached = self._selectable.get(key)
        if cached is not None:
            return cached
        cel_device = None
        for reason, owner, selectors in (("DeviceClassSelector", f"class {request.class_.name}" if request.class_ else "",
                                          request.class_.spec.selectors if request.class_ else []),
                                         ("RequestSelector", f"claim {request.claim}", request.spec.selectors)):
            for index, selector in enumerate(selectors):
                expression = selector.cel.expression if selector.cel else None
                if expression is None:
                    where = f"{owner}, request {request.name}" if reason == "RequestSelector" else owner
                    raise AllocationError(f"{where}, selector #{index}: CEL expression empty (unsupported selector type?)")
                compiled = compile_selector(expression)
                if compiled.program is None:
                    if compiled.unsupported:
                        raise Undetermined(f"{owner}: selector #{index} ({expression}) uses a CEL function kubectl-dra "
                                           f"cannot evaluate ({compiled.error.splitlines()[0]})")
                    raise AllocationError(f"{owner}: selector #{index}: CEL compile error: {compiled.error}")
                cel_device = cel_device or self._cel_device(pool, device)
                try:
                    matched = evaluate(compiled, cel_device)
                except CELBeyondEvaluator as exc:
                    raise Undetermined(f"{owner}: selector #{index} ({expression}) on device "
                                       f"{pool.key}/{device.name}: {exc}",
                                       possible_error=f"{owner}: selector #{index} on device {pool.key}/{device.name}: "
                                                      f"CEL runtime error: {COST_ERROR}" if exc.budget else None) from None
                except CELError as exc:
                    hint = ". consider using CEL optional chaining (.? followed by orValue()) or guarding the " \
                        "check with has() for optional fields" if str(exc).startswith("no such key") else ""
                    raise AllocationError(f"{owner}: selector #{index} on device {pool.key}/{device.name}: "
                                          f"CEL runtime error: {exc}{hint}") from None
                if not matched:
                    result = (False, reason, f"{expression} is false")
                    self._selectable[key] = result
                    return result
        result = (True, "", "")
        self._selectable[key] = result
        return result

    def _capacity_fits(self, request: _Request, pool: Pool, device: Device, allocating: dict,
                       static: bool = False) -> tuple[bool, dict]:
        """``CmpRequestOverCapacity``: (fits, what this request would consume); ``static``: against the
        device's capacity alone (what ``All`` collects its devices with)."""
        if "consumableCapacity" not in self.features:
            return True, {}
        asked = request.spec.capacity.requests if request.spec.capacity else {}
        if any(name not in device.capacity for name in asked):
            return False, {}
        key = (pool.driver, pool.name, device.name)
        current = {} if static else self.state.consumed.get(key, {})
        mine = {} if static else allocating.get(key, {})
        consumed = {}
        for name, cap in device.capacity.items():
            try:
                amount = _policy_amount(asked.get(name), cap, "fractionalCapacityRange" in self.features)
            except _RangeError as exc:
                where = f"{pool.key}/{device.name}" if not static else device.name
                raise AllocationError(f"claim {request.claim}, request {request.name}: checking capacity for device {where}: "
                                      f"capacity \"{name}\": capacity request cannot be represented in the "
                                      f"device's range arithmetic: {exc}") from None
            if amount.sign() < 0:
                raise AllocationError(f"negative capacity request for {name}")
            if _violates(amount, cap):
                return False, {}
            total = amount
            for other in (current.get(name), mine.get(name)):
                if other is not None:
                    total = total + other
            if total > cap.value:
                return False, {}
            consumed[name] = amount
        return True, consumed

    def pool_available(self, pool: Pool) -> dict[str, dict[str, Quantity]]:
        """Counters left in the pool after the cluster's allocations (may be negative)."""
        cached = self._available.get(pool.key)
        if cached is not None:
            return cached
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for rs in (*pool.slices, *pool.others):
            for device in rs.spec.devices:
                if not self.state.is_allocated((pool.driver, pool.name, device.name)):
                    continue
                for use in device.consumes_counters:
                    counters = available.get(use.counter_set)
                    if counters is None:
                        continue
                    for counter, spec in use.counters.items():
                        if counter in counters:
                            counters[counter] = counters[counter] - spec.value
        self._available[pool.key] = available
        return available

    def _reserve(self, pool: Pool, device: Device, consumed: dict) -> None:
        """Add the device's counter consumption to an attempt's (``consumedCounters``)."""
        mine = consumed.setdefault(pool.key, {})
        for use in device.consumes_counters:
            per_set = mine.setdefault(use.counter_set, {})
            for counter, spec in use.counters.items():
                amount = spec.value
                per_set[counter] = per_set[counter] + amount if counter in per_set else amount

    def _short_counter(self, pool: Pool, device: Device, consumed: dict) -> tuple[str, str, Quantity, object] | None:
        """``checkAvailableCounters``: with the device's consumption added to the attempt's, the first
        counter of the pool (set, counter, left, wanted) with less left than wanted, or None.

        Upstream compares EVERY counter of EVERY counter set of the pool, a counter nobody in the
        attempt consumes counting as zero wanted, so a counter the cluster's allocations already
        overdrew (a slice that shrank its counters) refuses every counter-consuming device of the pool
        (k8s.io/dynamic-resource-allocation@v0.37.2 structured/internal/incubating/
        allocator_incubating.go lines 1666-1678, docs/kubernetes/dra-apis.md §6.2). The reservation is taken
        back either way."""
        available = self.pool_available(pool)
        self._reserve(pool, device, consumed)
        mine = consumed[pool.key]
        try:
            for set_name in sorted(available):
                for counter in sorted(available[set_name]):
                    left = available[set_name][counter]
                    wanted = mine.get(set_name, {}).get(counter, 0)
                    if left < wanted:
                        return set_name, counter, left, wanted
            return None
        finally:
            self._release(pool, device, consumed)

    def _release(self, pool: Pool, device: Device, consumed: dict) -> None:
        mine = consumed.get(pool.key, {})
        for use in device.consumes_counters:
            per_set = mine.get(use.counter_set, {})
            for counter, spec in use.counters.items():
                if counter in per_set:
                    per_set[counter] = per_set[counter] - spec.value

    # -- the checks of one device, in the allocator's order --------------------------------------

    def _refusal(self, request: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node,
                 attempt: _Attempt, preselected: bool = False, settled: bool = False) -> tuple[str, str] | None:
        """Why ``request`` cannot take the device now, as (reason, message), or None when it can (its
        claim's constraints aside). The one order of device checks, the scheduler's: ``allocateOne``'s
        device loop (in use, ``isSelectable``, ``CmpRequestOverCapacity``) then ``allocateDevice``
        (counters, taints; the search adds constraints), in k8s.io/dynamic-resource-allocation@v0.37.2
        structured/internal/incubating/allocator_incubating.go. ``preselected``: an ``All`` request's
        device, selected when its request was built, so ``allocateDevice``'s checks alone;
        ``settled``: a device that passed the checks that cannot change during a search (selection,
        taints) once already for this request, so only the others."""
        key = (pool.driver, pool.name, device.name)
        multi = self._multi(device)
        refusal = self._in_use_refusal(request, key, multi, attempt)
        if refusal is None and not preselected:
            if not settled:
                refusal = self._selection_refusal(request, pool, rs, device, node)
            refusal = refusal or self._capacity_refusal(request, pool, device, attempt)
        refusal = refusal or self._counters_refusal(pool, device, key, multi, attempt)
        if refusal is None and not settled:
            refusal = self._taint_refusal(request, pool, device)
        return refusal

    def _in_use_refusal(self, request: _Request, key: tuple, multi: bool, attempt: _Attempt):
        """Checked first upstream because it is cheap. Admin access only minds its own claim's picks in
        this attempt; otherwise held exclusively by another claim (even a shareable device allocated
        before as a whole), or picked in this attempt (exclusive devices only)."""
        if request.spec.admin_access:
            in_use = not multi and request.claim_index in attempt.picked.get(key, set())
        else:
            in_use = key in self.state.exclusive or (not multi and bool(attempt.picked.get(key)))
        if not in_use:
            return None
        holder = self.state.exclusive.get(key)
        return "AlreadyAllocated", (f"allocated to claim {holder}" if holder is not None
                                    else "picked for another request of this allocation")

    def _selection_refusal(self, request: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node):
        """``isSelectable``; a CEL or node-selector failure raises _SelectionFailed (an Error)."""
        try:
            ok, reason, message = self._selectable_for(request, pool, rs, device, node)
        except AllocationError as exc:
            raise _SelectionFailed(str(exc)) from None
        return None if ok else (reason, message)

    def _capacity_refusal(self, request: _Request, pool: Pool, device: Device, attempt: _Attempt):
        """What is left of the device's consumable capacity, after the cluster's and this attempt's shares."""
        if self._capacity_fits(request, pool, device, attempt.capacity)[0]:
            return None
        sharing = self.state.shared.get((pool.driver, pool.name, device.name))
        return "Capacity", "not enough capacity left for what the request asks" + (
            f" (shared with {', '.join(sharing)})" if sharing else "")

    def _counters_refusal(self, pool: Pool, device: Device, key: tuple, multi: bool, attempt: _Attempt):
        """A partitionable device's shared counters; only checked here, the search reserves on taking."""
        if not device.consumes_counters:
            return None
        if "partitionableDevices" not in self.features:
            return "Counters", "the device consumes shared counters, and DRAPartitionableDevices is off"
        if self._counters_counted(key, multi, attempt):
            return None
        short = self._short_counter(pool, device, attempt.counters)
        if short is None:
            return None
        set_name, counter, left, wanted = short
        if left < 0:
            return "Counters", (f"shared counter {set_name}/{counter} of the pool is overdrawn ({left} left after "
                                "the cluster's allocations): the scheduler refuses every device of the pool that "
                                "consumes counters")
        return "Counters", (f"shared counter {set_name}/{counter} of the pool is used up: {left} left after other "
                            f"allocations, {wanted} wanted")

    def _taint_refusal(self, request: _Request, pool: Pool, device: Device):
        """A NoSchedule or NoExecute taint of the device or of a DeviceTaintRule, not tolerated."""
        taint = self._taint(pool, device, request.spec.tolerations)
        if taint is None:
            return None
        source = getattr(taint, "source", "slice")  # a rule's taint (TaintView) names its rule
        rule = f" (DeviceTaintRule {source.removeprefix('rule/')})" if source != "slice" else ""
        return "Taint", f"taint {taint.key}={taint.value}:{taint.effect}{rule} is not tolerated"

    def _counters_counted(self, key: tuple, multi: bool, attempt: _Attempt) -> bool:
        """A further share of a shareable device already in use charges no counters again."""
        return multi and (key in self.state.consumed or key in self.state.shared or key in attempt.capacity)

    # -- one node ------------------------------------------------------------------------------

    def _requests(self, pools: list[Pool], node: Node, lenient: bool = False) -> list[list[list[_Request]]]:
        """Per claim, per request, its alternatives (itself, or its subrequests), checked as the
        allocator checks them up front (``validateDeviceRequest``). ``lenient``: for the explanation
        after such a check failed: nothing checked, no ``All`` devices collected, no class needed."""
        out = []
        for claim_index, claim in enumerate(self.claims):
            who = _claim_name(claim)
            per_claim, minimum = [], 0
            for spec_request in claim.spec.devices.requests:
                variants = _variants(spec_request)
                if not lenient:
                    self._check_request(who, spec_request, variants)
                alternatives = []
                for name, parent, spec in variants:
                    if not lenient:
                        self._check_variant(who, name, parent, spec)
                    request = _Request(claim_index, who, name, parent, spec, self.classes.get(spec.device_class_name),
                                       count=spec.count or 1, all_mode=spec.allocation_mode == "All")
                    if request.all_mode and not lenient:
                        request.all_devices = self._all_devices(request, pools, node)
                        request.count = len(request.all_devices)
                    alternatives.append(request)
                if not lenient:
                    least = min(a.count for a in alternatives)
                    if least > MAX_RESULTS - minimum:
                        raise AllocationError(f"claim {who}, request {spec_request.name}: adding {least} devices exceeds "
                                              f"the claim limit of {MAX_RESULTS}, with {minimum} already accounted for")
                    minimum += least
                per_claim.append(alternatives)
            out.append(per_claim)
        return out

    def _check_request(self, who: str, spec_request, variants: list) -> None:
        """What the allocator refuses in a request before looking at its alternatives."""
        if spec_request.exactly is None and spec_request.first_available and "prioritizedList" not in self.features:
            raise AllocationError(f"claim {who}, request {spec_request.name}: has subrequests, but the "
                                  "DRAPrioritizedList feature is disabled")
        if not variants:
            raise AllocationError(f"claim {who}, request {spec_request.name}: missing device class name "
                                  "(unsupported request type?)")

    def _check_variant(self, who: str, name: str, parent: str | None, spec: ExactDeviceRequest) -> None:
        """What the allocator refuses in one (sub)request: disabled features, a missing class, a mode."""
        if spec.admin_access is not None and "adminAccess" not in self.features:
            raise AllocationError(f"claim {who}, request {name}: admin access is requested, but the "
                                  "feature is disabled")
        if spec.capacity and spec.capacity.requests and "consumableCapacity" not in self.features:
            what = f"subrequest {name.split('/', 1)[1]}" if parent else f"request {name}"
            raise AllocationError(f"claim {who}, {what}: has capacity requests, but the "
                                  "DRAConsumableCapacity feature is disabled")
        if not spec.device_class_name:
            raise AllocationError(f"claim {who}, request {name}: missing device class name "
                                  "(unsupported request type?)")
        if self.classes.get(spec.device_class_name) is None:
            raise AllocationError(f'claim {who}, request {name}: could not retrieve device class '
                                  f'{spec.device_class_name}: deviceclass.resource.k8s.io '
                                  f'"{spec.device_class_name}" not found')
        if spec.allocation_mode not in ("All", "ExactCount", "", None):
            raise AllocationError(f"claim {who}, request {name}: unsupported count mode {spec.allocation_mode}")

    def _all_devices(self, request: _Request, pools: list[Pool], node: Node) -> list[tuple]:
        """An ``All`` request's devices: every selectable one whose capacity could hold it; an
        incomplete or invalid pool makes the request an error."""
        found = []
        for pool in pools:
            if pool.incomplete:
                raise AllocationError(f"claim {request.claim}, request {request.name}: asks for all devices, but "
                                      f"resource pool {pool.key} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {request.claim}, request {request.name}: asks for all devices, but "
                                      f"resource pool {pool.key} is currently invalid ({pool.invalid})")
            for rs, device in pool.devices():
                if self._selectable_for(request, pool, rs, device, node)[0] and \
                        self._capacity_fits(request, pool, device, {}, static=True)[0]:
                    found.append((pool, rs, device))
        return found

    def _selectable_for(self, request: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node):
        if (unreadable := pool.unreadable_for(device, selected=False)) is not None:
            raise Undetermined(f"device {pool.key}/{device.name}: {unreadable}")
        if device.binding_conditions and "bindingConditions" not in self.features:
            return False, "BindingConditions", "the device has binding conditions, and DRADeviceBindingConditions is off"
        ok, reason, message = self._selectors(request, pool, device)
        if not ok:
            return False, reason, message
        if rs.spec.per_device_node_selection:
            try:
                reached = node_matches(node, device.node_name, device.all_nodes, device.node_selector)
            except NodeSelectorError as exc:
                raise AllocationError(f"device {pool.key}/{device.name}: node selector: {exc}") from None
            if not reached:
                return False, "NodeSelection", f"the device's node selection does not include node {node.name}"
        if (unreadable := pool.unreadable_for(device, selected=True)) is not None:
            raise Undetermined(f"device {pool.key}/{device.name}: {unreadable}")
        return True, "", ""

    def allocate(self, node: Node, gathered: Gathered) -> NodeOutcome:
        outcome = NodeOutcome(node=node.name, feasible=False)
        try:
            if gathered.errors:
                raise AllocationError("; ".join(gathered.errors))
            if (unreadable := _unreadable_request(self.claims, self.classes)) is not None:
                raise Undetermined(unreadable)
            requests = self._requests(gathered.pools, node)
            outcome.requests = self._diagnose(requests, gathered, node)
            outcome.proof = _proof(requests, outcome.requests)
            # with a proof, the search only tells whether the scheduler's own ends within its bound
            picks = None if outcome.proof and self.bound.filter_timeout <= 0 else \
                self._search(_Search(self, requests, gathered.pools, node), outcome)
        except Undetermined as exc:
            outcome.undetermined = str(exc)
            outcome.possible_error = exc.possible_error
            return outcome
        except AllocationError as exc:
            outcome.error = str(exc)
            if not outcome.requests:
                outcome.requests = self._safe_diagnose(gathered, node)
            return outcome
        except _Stopped as stop:
            self._stopped(outcome, stop.cut)
            return outcome
        if picks is None:
            if any(p.invalid for p in gathered.pools):
                outcome.error = "invalid resource pools were encountered"
            return outcome
        outcome.feasible = True
        outcome.results = picks
        return outcome

    def _search(self, search: _Search, outcome: NodeOutcome) -> list[Pick] | None:
        """The search, within this node's share of the bound; how long it took is kept, and when
        that came near the scheduler's filterTimeout, what the scheduler may say instead."""
        search.deadline, search.cut = self.bound.deadline()
        began = time.monotonic()
        try:
            picks = search.run()
        finally:
            outcome.seconds = time.monotonic() - began
            outcome.steps = search.steps
            self.bound.spend(outcome.seconds)
        limit = self.bound.filter_timeout
        if limit > 0 and outcome.seconds > SURE * limit:
            outcome.possible_error = timeout_words(outcome.node)
            outcome.timing = (f"the search took {outcome.seconds:.2f}s here ({outcome.steps:,} steps), more than a "
                              f"quarter of the scheduler's bound ({self.bound.source}): the scheduler may stop first "
                              f"and fail with \"{outcome.possible_error}\"")
        return picks

    def _stopped(self, outcome: NodeOutcome, cut: bool) -> None:
        """The search was stopped: the node's answer is the proof's when there is one, else unknown;
        what the scheduler reports depends on whether its own search ends within filterTimeout."""
        bound = self.bound
        if cut:
            why = (f"kubectl-dra stopped the search after {outcome.steps:,} steps: this command's searches used up "
                   f"their {bound.total:g}s")
        elif bound.filter_timeout > 0:
            why = f"stopped after {outcome.steps:,} steps at {bound.per_node:g}s, the scheduler's bound ({bound.source})"
        else:
            why = (f"kubectl-dra stopped the search after {outcome.steps:,} steps at {bound.per_node:g}s; this "
                   f"scheduler has no filterTimeout ({bound.source}) and searches on")
        if bound.filter_timeout > 0:
            outcome.possible_error = timeout_words(outcome.node)
            why += (f": the scheduler then fails the pod's scheduling attempt with \"{outcome.possible_error}\" "
                    "unless its own (faster) search ends sooner, which is not known")
        outcome.timing = why
        if outcome.proof is None:
            outcome.undetermined = f"{why}; whether the claims can be allocated on this node is not known"

    def _safe_diagnose(self, gathered: Gathered, node: Node) -> list[RequestDiagnosis]:
        try:
            return self._diagnose(self._requests(gathered.pools, node, lenient=True), gathered, node)
        except (AllocationError, Undetermined):
            return []

    # -- one device, for a view of what is free (devices/explain.py) ----------------------------

    def device_refusal(self, spec: ExactDeviceRequest, class_: DeviceClass | None, pool: Pool, rs: ResourceSlice,
                       device: Device, node: Node) -> tuple[str, str] | None:
        """Why a fresh request ``spec`` (of ``class_``, or of no class: no class selectors) could not
        take ``device`` on ``node`` now, as (reason, message), or None when it could: the scheduler's
        own device checks in its order, against the cluster's allocations. A selector that fails or
        cannot be evaluated is ("Undetermined", why): what the scheduler would do there is not a count.
        Selection is asked first (a class that does not accept a device is "DeviceClassSelector",
        whoever holds it); the selectors' results are cached per device, so ask once per device."""
        request = _Request(0, "", "req", None, spec, class_)
        try:
            try:  # selection first: whether the class accepts a device does not depend on who holds it
                return self._selection_refusal(request, pool, rs, device, node) or \
                    self._refusal(request, pool, rs, device, node, _Attempt())
            except _SelectionFailed as exc:
                return "Undetermined", f"the scheduler fails on this device: {exc}"
        except Undetermined as exc:
            return "Undetermined", str(exc)

    def forget_devices(self) -> None:
        """Drop what the selectors cached per device: a view that asks each device once (devices/
        explain.py, pool by pool) must not hold a CEL input per device of the cluster."""
        self._cel_devices.clear()
        self._selectable.clear()

    # -- explanation ---------------------------------------------------------------------------

    def _diagnose(self, requests, gathered: Gathered, node: Node) -> list[RequestDiagnosis]:
        diagnoses = []
        for per_claim in requests:
            for alternatives in per_claim:
                for request in alternatives:
                    diag = RequestDiagnosis(claim=request.claim, request=request.name,
                                            wanted="all" if request.all_mode else str(request.count))
                    for key, generation, newer in gathered.stale:
                        diag.rejected.append(Rejection(f"{key}/*", "PoolStale",
                                                       f"generation {generation} here, {newer} elsewhere: the pool "
                                                       "is being replaced"))
                    for pool in gathered.pools:
                        if pool.incomplete:
                            diag.rejected.append(Rejection(f"{pool.key}/*", "PoolIncomplete",
                                                           "not all of the pool's slices are published yet"))
                            continue
                        if pool.invalid:
                            diag.rejected.append(Rejection(f"{pool.key}/*", "PoolInvalid", pool.invalid))
                            continue
                        for rs, device in pool.devices():
                            verdict = self._why_not(request, pool, rs, device, node)
                            name = f"{pool.key}/{device.name}"
                            if verdict is None:
                                diag.candidates.append(name)
                            else:
                                diag.rejected.append(Rejection(name, *verdict))
                    diagnoses.append(diag)
        return diagnoses

    def _why_not(self, request: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node):
        """The device's one reason, against the cluster's allocations alone (a fresh attempt), or None.
        Selection is asked first: a device the request would never take is better explained by its
        selector than by who holds it (no decision changes); then the search's own order."""
        attempt = _Attempt()
        try:
            try:
                return self._selection_refusal(request, pool, rs, device, node) or \
                    self._refusal(request, pool, rs, device, node, attempt)
            except _SelectionFailed as exc:  # the allocator skips a device in use before evaluating it
                key = (pool.driver, pool.name, device.name)
                return self._in_use_refusal(request, key, self._multi(device), attempt) or (
                    "DeviceClassSelector" if str(exc).startswith("class ") else "RequestSelector", f"failed: {exc}")
        except Undetermined as exc:
            return "Undetermined", str(exc)

    def _constraints(self, claim: ResourceClaim) -> list:
        out = []
        for constraint in claim.spec.devices.constraints:
            names = set(constraint.requests)
            if constraint.match_attribute:
                out.append(_Match(names, constraint.match_attribute))
            elif constraint.distinct_attribute:
                out.append(_Distinct(names, constraint.distinct_attribute))
            else:
                raise AllocationError(f"claim {_claim_name(claim)}, constraint #{len(out)}: empty constraint "
                                      "(unsupported constraint type?)")
        return out


@dataclass(frozen=True, slots=True)
class _Slot:
    """Which device the search fills next: of which claim, request, subrequest (its alternative)."""
    claim: int
    request: int = 0
    subrequest: int = 0
    device: int = 0

    def next_device(self) -> _Slot:
        """The same (sub)request's next device, once this one is taken."""
        return _Slot(self.claim, self.request, self.subrequest, self.device + 1)


class _Search:
    """``allocateOne``: a depth-first search over every claim's requests; what it has taken so far
    lives in ``attempt`` and ``picks`` and is given back on the way up. The node's devices are one
    list in pool, slice, device order (``flat``); a request resumes after its last device taken."""

    def __init__(self, allocator: Allocator, requests: list[list[list[_Request]]], pools: list[Pool], node: Node):
        self.allocator = allocator
        self.requests = requests  # per claim, per request, its alternatives
        self.node = node
        self.flat = [(pool, rs, device) for pool in pools if not (pool.incomplete or pool.invalid)
                     for rs in pool.slices for device in rs.spec.devices]
        # per request (id), per device: refused for good (_STATIC), and passed what cannot change
        self.marks: dict[int, tuple[bytearray, bytearray]] = {}
        self.attempt = _Attempt()
        self.picks: list[list[Pick]] = [[] for _ in allocator.claims]  # per claim, what it has taken
        self.constraints = [allocator._constraints(claim) for claim in allocator.claims]  # per claim
        self.steps = 0  # fill calls: upstream's allocateOne invocations
        self.ticks = 0
        self.deadline: float | None = None
        self.cut = False

    def run(self) -> list[Pick] | None:
        """The first complete solution, or None; raises _Stopped at the deadline."""
        try:
            found = self.fill(_Slot(0), within_subrequest=False, resume=0)
        except _MaxSize:
            found = False
        if not found:
            return None
        return [pick for per_claim in self.picks for pick in per_claim]

    def tick(self) -> None:
        self.ticks += 1
        if not self.ticks & _TICK and self.deadline is not None and time.monotonic() > self.deadline:
            raise _Stopped(self.cut)

    def fill(self, slot: _Slot, within_subrequest: bool, resume: int) -> bool:
        """Fill ``slot`` and everything after it; raises _MaxSize when too many devices are asked."""
        self.steps += 1
        self.tick()
        if slot.claim >= len(self.requests):
            return True
        if slot.request >= len(self.requests[slot.claim]):
            try:
                return self.fill(_Slot(slot.claim + 1), False, 0)
            except _MaxSize:  # another choice in an earlier claim may ask for fewer devices here
                return False
        alternatives = self.requests[slot.claim][slot.request]
        request = alternatives[slot.subrequest]
        if not within_subrequest and request.parent is not None:
            return self.fill_first_available(slot, len(alternatives))
        if request.all_mode and not request.all_devices:
            return False
        if slot.device >= request.count:
            return self.fill(_Slot(slot.claim, slot.request + 1), False, 0)
        if request.count - slot.device > MAX_RESULTS - len(self.picks[slot.claim]):
            raise _MaxSize()
        if request.all_mode:
            return self.fill_all(slot, request, within_subrequest)
        return self.fill_from_pools(slot, request, within_subrequest, resume)

    def fill_first_available(self, slot: _Slot, count: int) -> bool:
        """Subrequests in order, the first that leads to a solution wins; _MaxSize only when all hit it."""
        all_too_many = True
        for subrequest in range(count):
            try:
                if self.fill(_Slot(slot.claim, slot.request, subrequest, slot.device), True, 0):
                    return True
                all_too_many = False
            except _MaxSize:
                continue
        if all_too_many:
            raise _MaxSize()
        return False

    def fill_all(self, slot: _Slot, request: _Request, within_subrequest: bool) -> bool:
        """An ``All`` request takes its devices in the one order collected: the next one or nothing."""
        pool, rs, device = request.all_devices[slot.device]
        undo = self.take(request, pool, rs, device, must=True)
        if undo is None:
            return False
        return self.continue_or_undo(undo, slot.next_device(), within_subrequest, 0)

    def fill_from_pools(self, slot: _Slot, request: _Request, within_subrequest: bool, resume: int) -> bool:
        """Devices in pool, slice, device order from ``resume``; each one taken is tried to the end."""
        marks = self.marks.get(id(request))
        if marks is None:
            marks = self.marks[id(request)] = (bytearray(len(self.flat)), bytearray(len(self.flat)))
        skip, flat = marks[0], self.flat
        index = skip.find(0, resume)  # the next device not refused for good, found in C
        while index >= 0:
            pool, rs, device = flat[index]
            undo = self.take(request, pool, rs, device, must=False, marks=marks, index=index)
            if undo is not None and self.continue_or_undo(undo, slot.next_device(), within_subrequest, index + 1):
                return True
            index = skip.find(0, index + 1)
        return False

    def continue_or_undo(self, undo, slot: _Slot, within_subrequest: bool, resume: int) -> bool:
        """Go on after taking a device; give it back unless that led to a solution (or on an error)."""
        try:
            done = self.fill(slot, within_subrequest, resume)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def take(self, request: _Request, pool: Pool, rs: ResourceSlice, device: Device, must: bool,
             marks: tuple[bytearray, bytearray] | None = None, index: int = 0):
        """``allocateDevice``: the device's checks, then its claim's constraints (a broken one is an
        error for ``must``, an ``All`` request); an undo function, or None when it cannot be taken.
        ``marks`` (the request's skip and passed arrays, ``index`` the device's place) remember what
        cannot change during the search: a refusal for good, or having passed those checks."""
        self.tick()
        allocator, attempt = self.allocator, self.attempt
        key = (pool.driver, pool.name, device.name)
        settled = marks is not None and bool(marks[1][index])
        refusal = allocator._refusal(request, pool, rs, device, self.node, attempt, preselected=must, settled=settled)
        if marks is not None and not settled:
            if refusal is None:
                marks[1][index] = 1
            elif refusal[0] in _STATIC or (refusal[0] == "AlreadyAllocated" and not request.spec.admin_access
                                           and key in allocator.state.exclusive):
                marks[0][index] = 1
        if refusal is not None:
            return None
        multi = allocator._multi(device)
        steps: list = []  # how to take back what was taken so far, in order

        def rollback() -> None:
            for step in reversed(steps):
                step()

        if device.consumes_counters and not allocator._counters_counted(key, multi, attempt):
            allocator._reserve(pool, device, attempt.counters)
            steps.append(lambda: allocator._release(pool, device, attempt.counters))
        for constraint in self.constraints[request.claim_index]:
            if not constraint.add(request, pool, device):
                rollback()
                if must:
                    raise AllocationError(f"claim {request.claim}, request {request.name}: cannot add device "
                                          f"{pool.key}/{device.name} because a claim constraint would not be "
                                          "satisfied")
                return None
            steps.append(lambda c=constraint: c.remove(request))
        if not multi:
            attempt.picked.setdefault(key, set()).add(request.claim_index)
            steps.append(lambda: attempt.picked[key].discard(request.claim_index))
        fits, consumed = allocator._capacity_fits(request, pool, device, attempt.capacity)
        if not fits:
            rollback()
            return None
        if multi:
            mine = attempt.capacity.setdefault(key, {})
            for name, value in consumed.items():
                mine[name] = mine[name] + value if name in mine else value

            def give_back() -> None:
                for name, value in consumed.items():
                    attempt.capacity[key][name] = attempt.capacity[key][name] - value
            steps.append(give_back)
        picks = self.picks[request.claim_index]
        picks.append(Pick(request.claim, request.name, pool.driver, pool.name, device.name, shared=multi,
                          consumed=dict(consumed) if multi else {}))
        steps.append(picks.pop)
        return rollback



def lookup_attribute(device: Device, driver: str, name: str):
    """(kind, value) of a device attribute by its fully qualified name (the driver's own may be
    unqualified), or None: what matchAttribute and distinctAttribute compare."""
    attribute = device.attributes.get(name)
    if attribute is None and "/" in name:
        domain, ident = name.split("/", 1)
        if domain == driver:
            attribute = device.attributes.get(ident)
    if attribute is None:
        return None
    for kind in ("int_", "bool_", "string", "version"):
        value = getattr(attribute, kind)
        if value is not None:
            return (kind, value)
    return None


class _Constraint:
    def __init__(self, requests: set[str], attribute: str):
        self.requests, self.attribute = requests, attribute

    def applies(self, request: _Request) -> bool:
        if not self.requests:
            return True
        return (request.parent or request.name) in self.requests or request.name in self.requests


class _Match(_Constraint):
    def __init__(self, requests, attribute):
        super().__init__(requests, attribute)
        self.count, self.value = 0, None

    def add(self, request, pool, device) -> bool:
        if not self.applies(request):
            return True
        value = lookup_attribute(device, pool.driver, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request) -> None:
        if self.applies(request):
            self.count -= 1


class _Distinct(_Constraint):
    def __init__(self, requests, attribute):
        super().__init__(requests, attribute)
        self.values: list = []

    def add(self, request, pool, device) -> bool:
        if not self.applies(request):
            return True
        value = lookup_attribute(device, pool.driver, self.attribute)
        if value is None or value in self.values:
            return False
        self.values.append(value)
        return True

    def remove(self, request) -> None:
        if self.applies(request):
            self.values.pop()

