"""The scheduler's DRA allocation for one node, reproduced and explained.

Follows the allocator kube-scheduler 1.37 uses by default ("incubating" in
k8s.io/dynamic-resource-allocation structured/internal @ v0.37.2, chosen because the 1.37 default
gates enable binding conditions and consumable capacity): one depth-first pass over all of a
pod's unallocated claims in order, requests in spec order, devices in pool/slice/device order,
``firstAvailable`` subrequests in order, the first complete solution wins; within a request only
combinations in device order are tried. Per device, in the allocator's order: in use, class
selectors, request selectors, per-device node selection, capacity, counters, taints, then the
claim's constraints. A CEL error, an ``All`` request that sees an incomplete or invalid pool, or a
constraint broken in ``All`` mode is an error for the whole node (the scheduler reports an Error,
not "unschedulable").

Besides the decision, every request gets its candidates and each rejected device one reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kubectl_dra.allocation.cel import CELBeyondEvaluator, CELError, compile_selector, evaluate, quantity_value, semver_value
from kubectl_dra.allocation.pools import Gathered, Pool, node_matches
from kubectl_dra.allocation.state import AllocatedState
from kubectl_dra.model.node import Node
from kubectl_dra.model.claim import DeviceToleration, ExactDeviceRequest, ResourceClaim
from kubectl_dra.model.resource import Device, DeviceClass, DeviceTaint, ResourceSlice
from kubectl_dra.pools.nodeselector import NodeSelectorError
from kubectl_dra.quantity import Quantity
from kubectl_dra.taints.tolerations import tolerates

MAX_RESULTS = 32  # AllocationResultsMaxSize
DEFAULT_FEATURES = frozenset({"adminAccess", "prioritizedList", "partitionableDevices", "deviceTaints",
                              "consumableCapacity", "bindingConditions"})
"""What kube-scheduler 1.37 enables by default (DRAAdminAccess, DRAPrioritizedList, DRADeviceTaints GA;
DRAPartitionableDevices, DRAConsumableCapacity, DRADeviceBindingConditions beta, on)."""


class Undetermined(Exception):
    """Something this tool cannot evaluate (a CEL function it lacks): no verdict on the node."""


class AllocationError(Exception):
    """What makes the scheduler fail the node with an Error (not "unschedulable")."""


class _MaxSize(Exception):
    pass


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
    claim_index: int
    claim: str
    name: str  # "req" or "req/sub"
    parent: str | None
    spec: ExactDeviceRequest
    class_: DeviceClass | None
    count: int = 1
    all_mode: bool = False
    all_devices: list = field(default_factory=list)


def _variants(request) -> list[tuple[str, str | None, ExactDeviceRequest]]:
    """(name, parent, spec) of a request: itself, or each firstAvailable subrequest as "req/sub"."""
    if request.exactly is not None:
        return [(request.name, None, request.exactly)]
    return [(f"{request.name}/{s.name}", request.name, s) for s in request.first_available]


def _kobj(claim: ResourceClaim) -> str:
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
                 features: frozenset[str] = DEFAULT_FEATURES, rule_taints: dict | None = None):
        self.features = features
        self.rule_taints = rule_taints or {}  # (driver, pool, device) -> DeviceTaintRule taints
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
        scheduler's slice tracker adds DeviceTaintRule taints to the devices they select)."""
        if "deviceTaints" not in self.features:
            return None
        found = _blocking_taint(device, tolerations)
        if found is None and self.rule_taints:
            extra = self.rule_taints.get((pool.driver, pool.name, device.name))
            if extra:
                found = next((t for t in extra if t.effect in ("NoSchedule", "NoExecute")
                              and not _tolerated(t, tolerations)), None)
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

    def _selectors(self, rd: _Request, pool: Pool, device: Device) -> tuple[bool, str, str]:
        """(selectable, reason, message); a CEL failure raises AllocationError."""
        key = (id(device), rd.claim_index, rd.name)
        cached = self._selectable.get(key)
        if cached is not None:
            return cached
        cel_device = None
        for reason, owner, selectors in (("DeviceClassSelector", f"class {rd.class_.name}" if rd.class_ else "",
                                          rd.class_.spec.selectors if rd.class_ else []),
                                         ("RequestSelector", f"claim {rd.claim}", rd.spec.selectors)):
            for index, selector in enumerate(selectors):
                expression = selector.cel.expression if selector.cel else None
                if expression is None:
                    where = f"{owner}, request {rd.name}" if reason == "RequestSelector" else owner
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
                                       f"{pool.key}/{device.name}: {exc}") from None
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

    def _capacity_fits(self, rd: _Request, pool: Pool, device: Device, allocating: dict,
                       static: bool = False) -> tuple[bool, dict]:
        """``CmpRequestOverCapacity``: (fits, what this request would consume); ``static``: against the
        device's capacity alone (what ``All`` collects its devices with)."""
        if "consumableCapacity" not in self.features:
            return True, {}
        asked = rd.spec.capacity.requests if rd.spec.capacity else {}
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
                raise AllocationError(f"claim {rd.claim}, request {rd.name}: checking capacity for device {where}: "
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

    def _pool_available(self, pool: Pool) -> dict[str, dict[str, Quantity]]:
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

    def _counters_fit(self, pool: Pool, device: Device, consumed: dict) -> bool:
        """Add the device's consumption to this attempt's; fits when no counter of the pool is short."""
        if not device.consumes_counters:
            return True
        available = self._pool_available(pool)
        mine = consumed.setdefault(pool.key, {})
        for use in device.consumes_counters:
            per_set = mine.setdefault(use.counter_set, {})
            for counter, spec in use.counters.items():
                amount = spec.value
                per_set[counter] = per_set[counter] + amount if counter in per_set else amount
        for set_name, counters in available.items():
            for counter, left in counters.items():
                used = mine.get(set_name, {}).get(counter)
                if used is not None and left < used:
                    self._release(pool, device, consumed)
                    return False
        return True

    def _release(self, pool: Pool, device: Device, consumed: dict) -> None:
        mine = consumed.get(pool.key, {})
        for use in device.consumes_counters:
            per_set = mine.get(use.counter_set, {})
            for counter, spec in use.counters.items():
                if counter in per_set:
                    per_set[counter] = per_set[counter] - spec.value

    # -- one node ------------------------------------------------------------------------------

    def _requests(self, pools: list[Pool], node: Node) -> list[list[list[_Request]]]:
        """Per claim, per request, its (sub)requests; checks what the allocator checks up front."""
        out = []
        for index, claim in enumerate(self.claims):
            who = _kobj(claim)
            per_claim, minimum = [], 0
            for request in claim.spec.devices.requests:
                variants = _variants(request)
                if request.exactly is None and request.first_available and "prioritizedList" not in self.features:
                    raise AllocationError(f"claim {who}, request {request.name}: has subrequests, but the "
                                          "DRAPrioritizedList feature is disabled")
                if not variants:
                    raise AllocationError(f"claim {who}, request {request.name}: missing device class name "
                                          "(unsupported request type?)")
                datas = []
                for name, parent, spec in variants:
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
                    klass = self.classes.get(spec.device_class_name)
                    if klass is None:
                        raise AllocationError(f'claim {who}, request {name}: could not retrieve device class '
                                              f'{spec.device_class_name}: deviceclass.resource.k8s.io '
                                              f'"{spec.device_class_name}" not found')
                    rd = _Request(index, who, name, parent, spec, klass)
                    if spec.allocation_mode == "All":
                        rd.all_mode = True
                        for pool in pools:
                            if pool.incomplete:
                                raise AllocationError(f"claim {who}, request {name}: asks for all devices, but resource "
                                                      f"pool {pool.key} is currently being updated")
                            if pool.invalid:
                                raise AllocationError(f"claim {who}, request {name}: asks for all devices, but resource "
                                                      f"pool {pool.key} is currently invalid ({pool.invalid})")
                            for rs, device in pool.devices():
                                if self._selectable_for(rd, pool, rs, device, node)[0] and \
                                        self._capacity_fits(rd, pool, device, {}, static=True)[0]:
                                    rd.all_devices.append((pool, rs, device))
                        rd.count = len(rd.all_devices)
                    elif spec.allocation_mode in ("ExactCount", "", None):
                        rd.count = spec.count or 1
                    else:
                        raise AllocationError(f"claim {who}, request {name}: unsupported count mode "
                                              f"{spec.allocation_mode}")
                    datas.append(rd)
                least = min(d.count for d in datas)
                if least > MAX_RESULTS - minimum:
                    raise AllocationError(f"claim {who}, request {request.name}: adding {least} devices exceeds the "
                                          f"claim limit of {MAX_RESULTS}, with {minimum} already accounted for")
                minimum += least
                per_claim.append(datas)
            out.append(per_claim)
        return out

    def _selectable_for(self, rd: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node):
        if (unreadable := pool.unreadable_for(device, selected=False)) is not None:
            raise Undetermined(f"device {pool.key}/{device.name}: {unreadable}")
        if device.binding_conditions and "bindingConditions" not in self.features:
            return False, "BindingConditions", "the device has binding conditions, and DRADeviceBindingConditions is off"
        ok, reason, message = self._selectors(rd, pool, device)
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
            picks = self._search(requests, gathered.pools, node)
        except Undetermined as exc:
            outcome.undetermined = str(exc)
            return outcome
        except AllocationError as exc:
            outcome.error = str(exc)
            if not outcome.requests:
                outcome.requests = self._safe_diagnose(gathered, node)
            return outcome
        if picks is None:
            if any(p.invalid for p in gathered.pools):
                outcome.error = "invalid resource pools were encountered"
            return outcome
        outcome.feasible = True
        outcome.results = picks
        return outcome

    def _safe_diagnose(self, gathered: Gathered, node: Node) -> list[RequestDiagnosis]:
        try:
            return self._diagnose(self._requests_lenient(gathered.pools, node), gathered, node)
        except (AllocationError, Undetermined):
            return []

    def _requests_lenient(self, pools, node):
        out = []
        for index, claim in enumerate(self.claims):
            who = _kobj(claim)
            per_claim = []
            for request in claim.spec.devices.requests:
                variants = _variants(request)
                per_claim.append([_Request(index, who, n, p, s, self.classes.get(s.device_class_name),
                                           count=s.count or 1, all_mode=s.allocation_mode == "All")
                                  for n, p, s in variants])
            out.append(per_claim)
        return out

    # -- explanation ---------------------------------------------------------------------------

    def _diagnose(self, requests, gathered: Gathered, node: Node) -> list[RequestDiagnosis]:
        diagnoses = []
        for per_claim in requests:
            for datas in per_claim:
                for rd in datas:
                    diag = RequestDiagnosis(claim=rd.claim, request=rd.name,
                                            wanted="all" if rd.all_mode else str(rd.count))
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
                            verdict = self._device_verdict(rd, pool, rs, device, node)
                            name = f"{pool.key}/{device.name}"
                            if verdict is None:
                                diag.candidates.append(name)
                            else:
                                diag.rejected.append(Rejection(name, *verdict))
                    diagnoses.append(diag)
        return diagnoses

    def _device_verdict(self, rd: _Request, pool: Pool, rs: ResourceSlice, device: Device, node: Node):
        """The one reason a device is no candidate, or None. Selectors are reported before "in use"
        (a device the request would never take is better explained by the selector), which does
        not change the decision: the search follows the allocator's own order."""
        key = (pool.driver, pool.name, device.name)
        multi = self._multi(device)
        held = not rd.spec.admin_access and key in self.state.exclusive  # exclusive: not shareable either
        try:
            ok, reason, message = self._selectable_for(rd, pool, rs, device, node)
        except Undetermined as exc:
            return "Undetermined", str(exc)
        except AllocationError as exc:
            if held:  # the allocator skips it before evaluating anything
                return "AlreadyAllocated", f"allocated to claim {self.state.exclusive[key]}"
            return ("DeviceClassSelector" if str(exc).startswith("class ") else "RequestSelector"), f"failed: {exc}"
        if not ok:
            return reason, message
        if held:
            return "AlreadyAllocated", f"allocated to claim {self.state.exclusive[key]}"
        fits, _ = self._capacity_fits(rd, pool, device, {})
        if not fits:
            return "Capacity", "not enough capacity left for what the request asks" + (
                f" (shared with {', '.join(self.state.shared.get(key, []))})" if self.state.shared.get(key) else "")
        if device.consumes_counters and "partitionableDevices" not in self.features:
            return "Counters", "the device consumes shared counters, and DRAPartitionableDevices is off"
        if device.consumes_counters and not (multi and self.state.is_allocated(key)):
            trial: dict = {}
            if not self._counters_fit(pool, device, trial):
                return "Counters", "the pool's shared counters are used up by other allocations"
        taint = self._taint(pool, device, rd.spec.tolerations)
        if taint is not None:
            source = getattr(taint, "source", "slice")  # a rule's taint (TaintView) names its rule
            rule = f" (DeviceTaintRule {source.removeprefix('rule/')})" if source != "slice" else ""
            return "Taint", f"taint {taint.key}={taint.value}:{taint.effect}{rule} is not tolerated"
        return None

    # -- the search (allocateOne) ----------------------------------------------------------------

    def _search(self, requests, pools: list[Pool], node: Node) -> list[Pick] | None:
        picks: list[list[Pick]] = [[] for _ in self.claims]
        allocating: dict[tuple, set[int]] = {}
        capacity: dict[tuple, dict[str, Quantity]] = {}
        counters: dict = {}
        constraints = [self._constraints(claim) for claim in self.claims]

        def taken(rd: _Request, key, multi: bool) -> bool:
            """In use for this request: admin access only minds its own claim's picks in this attempt;
            otherwise held exclusively by another claim (even a shareable device allocated before as a
            whole), or picked in this attempt (exclusive devices only)."""
            if rd.spec.admin_access:
                return not multi and rd.claim_index in allocating.get(key, set())
            return key in self.state.exclusive or (not multi and bool(allocating.get(key)))

        def add(rd: _Request, pool: Pool, rs: ResourceSlice, device: Device, must: bool):
            """``allocateDevice``: an undo function, or None when the device cannot be taken."""
            key = (pool.driver, pool.name, device.name)
            multi = self._multi(device)
            if taken(rd, key, multi):
                return None
            if device.consumes_counters and "partitionableDevices" not in self.features:
                return None
            skip_counters = multi and (key in self.state.consumed or key in self.state.shared or key in capacity)
            if not skip_counters and device.consumes_counters and not self._counters_fit(pool, device, counters):
                return None
            steps: list = []  # how to take back what was taken so far, in order

            def rollback() -> None:
                for step in reversed(steps):
                    step()

            if not skip_counters and device.consumes_counters:
                steps.append(lambda: self._release(pool, device, counters))
            if self._taint(pool, device, rd.spec.tolerations) is not None:
                rollback()
                return None
            for constraint in constraints[rd.claim_index]:
                if not constraint.add(rd, pool, device):
                    rollback()
                    if must:
                        raise AllocationError(f"claim {rd.claim}, request {rd.name}: cannot add device "
                                              f"{pool.key}/{device.name} because a claim constraint would not be "
                                              "satisfied")
                    return None
                steps.append(lambda c=constraint: c.remove(rd))
            if not multi:
                allocating.setdefault(key, set()).add(rd.claim_index)
                steps.append(lambda: allocating[key].discard(rd.claim_index))
            fits, consumed = self._capacity_fits(rd, pool, device, capacity)
            if not fits:
                rollback()
                return None
            if multi:
                mine = capacity.setdefault(key, {})
                for name, value in consumed.items():
                    mine[name] = mine[name] + value if name in mine else value

                def give_back() -> None:
                    for name, value in consumed.items():
                        capacity[key][name] = capacity[key][name] - value
                steps.append(give_back)
            picks[rd.claim_index].append(Pick(rd.claim, rd.name, pool.driver, pool.name, device.name, shared=multi,
                                              consumed=dict(consumed) if multi else {}))
            steps.append(picks[rd.claim_index].pop)
            return rollback

        def one(claim: int, request: int, sub: int, index: int, in_sub: bool, start: tuple[int, int, int]) -> bool:
            if claim >= len(requests):
                return True
            if request >= len(requests[claim]):
                try:
                    return one(claim + 1, 0, 0, 0, False, (0, 0, 0))
                except _MaxSize:
                    return False
            datas = requests[claim][request]
            rd = datas[sub]
            if not in_sub and rd.parent is not None:
                all_max = True
                for s in range(len(datas)):
                    try:
                        if one(claim, request, s, index, True, (0, 0, 0)):
                            return True
                        all_max = False
                    except _MaxSize:
                        continue
                if all_max:
                    raise _MaxSize()
                return False
            if rd.all_mode and not rd.all_devices:
                return False
            if index >= rd.count:
                return one(claim, request + 1, 0, 0, False, (0, 0, 0))
            if rd.count - index > MAX_RESULTS - len(picks[claim]):
                raise _MaxSize()
            if rd.all_mode:
                pool, rs, device = rd.all_devices[index]
                undo = add(rd, pool, rs, device, True)
                if undo is None:
                    return False
                try:
                    if one(claim, request, sub, index + 1, in_sub, (0, 0, 0)):
                        return True
                except BaseException:
                    undo()
                    raise
                undo()
                return False
            for p in range(start[0], len(pools)):
                pool = pools[p]
                if pool.incomplete or pool.invalid:
                    continue
                for s_index in range(start[1] if p == start[0] else 0, len(pool.slices)):
                    rs = pool.slices[s_index]
                    first = start[2] if (p, s_index) == start[:2] else 0
                    for d in range(first, len(rs.spec.devices)):
                        device = rs.spec.devices[d]
                        key = (pool.driver, pool.name, device.name)
                        if taken(rd, key, self._multi(device)):
                            continue
                        if not self._selectable_for(rd, pool, rs, device, node)[0]:
                            continue
                        if not self._capacity_fits(rd, pool, device, capacity)[0]:
                            continue
                        undo = add(rd, pool, rs, device, False)
                        if undo is None:
                            continue
                        try:
                            done = one(claim, request, sub, index + 1, in_sub, (p, s_index, d + 1))
                        except BaseException:
                            undo()
                            raise
                        if done:
                            return True
                        undo()
            return False

        try:
            found = one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSize:
            found = False
        if not found:
            return None
        return [p for per_claim in picks for p in per_claim]

    def _constraints(self, claim: ResourceClaim) -> list:
        out = []
        for constraint in claim.spec.devices.constraints:
            names = set(constraint.requests)
            if constraint.match_attribute:
                out.append(_Match(names, constraint.match_attribute))
            elif constraint.distinct_attribute:
                out.append(_Distinct(names, constraint.distinct_attribute))
            else:
                raise AllocationError(f"claim {_kobj(claim)}, constraint #{len(out)}: empty constraint "
                                      "(unsupported constraint type?)")
        return out


def _lookup(device: Device, driver: str, name: str):
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

    def applies(self, rd: _Request) -> bool:
        if not self.requests:
            return True
        return (rd.parent or rd.name) in self.requests or rd.name in self.requests


class _Match(_Constraint):
    def __init__(self, requests, attribute):
        super().__init__(requests, attribute)
        self.count, self.value = 0, None

    def add(self, rd, pool, device) -> bool:
        if not self.applies(rd):
            return True
        value = _lookup(device, pool.driver, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, rd) -> None:
        if self.applies(rd):
            self.count -= 1


class _Distinct(_Constraint):
    def __init__(self, requests, attribute):
        super().__init__(requests, attribute)
        self.values: list = []

    def add(self, rd, pool, device) -> bool:
        if not self.applies(rd):
            return True
        value = _lookup(device, pool.driver, self.attribute)
        if value is None or value in self.values:
            return False
        self.values.append(value)
        return True

    def remove(self, rd) -> None:
        if self.applies(rd):
            self.values.pop()

