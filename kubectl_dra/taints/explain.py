"""Device taints and what they do, as the device taint eviction controller decides
(kube-controller-manager, pkg/controller/devicetainteviction @ v1.37.2).

Taints come from ResourceSlices (the pool's highest generation only) and from DeviceTaintRules
(matched against published devices and against allocation results: a rule taints an allocated
device even when no slice lists it). Only ``NoExecute`` evicts; ``NoSchedule`` keeps new
allocations away and leaves existing ones; ``None`` does nothing. The pods at stake are those on a
node that use the claim (by name; through a template or an extended-resource status, if the claim
is theirs) and that ``status.reservedFor`` lists. Tolerations are the claim's allocation results'
(copied from the request when it was allocated) and count only with effect ``NoExecute``: one
without ``tolerationSeconds`` tolerates forever, otherwise the shortest delay counts from the
taint's ``timeAdded``. Eviction deletes the pod (no PodDisruptionBudget).

A taint of a slice or a toleration of an allocation result that did not validate when it was read,
or a DeviceTaintRule that cannot be evaluated and may select the device (taints/rules.py), makes the
outcome for that claim ``Unknown`` (with the field): what it would have decided is not guessed from
what is left.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Iterable
from kubectl_dra.document import Finding
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import ResourceClaim, is_reserved_for_pod
from kubectl_dra.model.resource import DeviceTaint, DeviceTaintRule, ResourceSlice
from kubectl_dra.pools.slices import current_slices
from kubectl_dra.taints.rules import UnevaluatedRule, first_unknown, split_rules
from kubectl_dra.taints.tolerations import tolerates
from kubectl_dra.text import plural
from kubectl_dra.taints.document import ConsumerOutcome, TaintExplanation, TaintView, TaintedDevice
from kubectl_dra.versions import CONTROLLER_MANAGER, Versions, note

Key = tuple[str, str, str]  # driver, pool, device


def _time(value) -> str | None:
    if not isinstance(value, datetime):
        return None
    return (value.astimezone(timezone.utc) if value.tzinfo else value).strftime("%Y-%m-%dT%H:%M:%SZ")


def _taint(taint: DeviceTaint, source: str) -> TaintView:
    return TaintView(key=taint.key, value=taint.value, effect=taint.effect, time_added=_time(taint.time_added),
                     source=source)


def rule_taint(rule: DeviceTaintRule, now: datetime | None = None) -> TaintView:
    """A rule's taint; an unset ``timeAdded`` is what the API server fills in: now."""
    taint = rule.spec.taint
    added = _time(taint.time_added) or (_time(now) if now else None)
    return TaintView(key=taint.key, value=taint.value, effect=taint.effect, time_added=added,
                     source=f"rule/{rule.name}")


def rule_selects(rule: DeviceTaintRule, key: Key) -> bool:
    """No ``deviceSelector`` selects nothing; ``{}`` selects everything; set fields match exactly."""
    selector = rule.spec.device_selector
    return selector is not None and selector.matches(*key)


Published = tuple[dict[Key, str | None], dict[Key, list[TaintView]], dict[Key, str]]


def published_devices(inventory: Inventory) -> Published:
    """Every device of each pool's highest generation with the node of its slice, the taints its
    slice gives it, and the devices whose taints did not validate (with the first such field):
    indexed once per inventory, so one claim's question costs only its devices."""
    return inventory.index("taints.published", lambda: _published(inventory.all(ResourceSlice)))


def _published(slices: list[ResourceSlice]) -> Published:
    nodes: dict[Key, str | None] = {}
    taints: dict[Key, list[TaintView]] = {}
    unreadable: dict[Key, str] = {}
    for rs in current_slices(slices):
        for index, device in enumerate(rs.spec.devices):
            key = (rs.spec.driver, rs.spec.pool.name, device.name)
            nodes[key] = rs.spec.node_name or device.node_name
            bad = rs.invalid_under(f"spec.devices[{index}].taints") if rs.invalid_fields else []
            if bad:
                unreadable[key] = f"ResourceSlice {rs.name}: {bad[0]} did not validate"
            if device.taints or bad:
                taints.setdefault(key, []).extend(_taint(t, "slice") for t in device.taints)
    return nodes, taints, unreadable


def taints_of(inventory: Inventory, rules: list[DeviceTaintRule], now: datetime, keys) -> dict[Key, list[TaintView]]:
    """Taints of the devices ``keys``: their slices' (highest generation), then every matching rule's."""
    _, from_slices, _ = published_devices(inventory)
    keys = list(dict.fromkeys(keys))  # a device a claim holds twice (shares of it) has its taints once
    out: dict[Key, list[TaintView]] = {}
    for key in keys:
        if key in from_slices:
            out[key] = list(from_slices[key])
    for rule in sorted(rules, key=lambda r: r.name):
        taint = rule_taint(rule, now)
        for key in keys:
            if rule_selects(rule, key):
                out.setdefault(key, []).append(taint)
    return out


def device_taints(inventory: Inventory, rules: list[DeviceTaintRule], now: datetime,
                  extra_keys=()) -> dict[Key, list[TaintView]]:
    """Taints per device over every published device and ``extra_keys`` (e.g. allocated ones no
    slice lists: a rule taints them too)."""
    published, _, _ = published_devices(inventory)
    return taints_of(inventory, rules, now, [*published, *extra_keys])


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def eviction_time(claim: ResourceClaim, taints: dict[Key, list[TaintView]], now: datetime) -> datetime | None:
    """``claimEvictionTime``: when the controller deletes the claim's pods, or None (no NoExecute
    taint, or each one tolerated forever)."""
    when = None
    for result in claim.status.allocation.devices.results if claim.status.allocation else ():
        tolerations = [t for t in result.tolerations if t.effect == "NoExecute"]
        for taint in taints.get((result.driver, result.pool, result.device), ()):
            if taint.effect != "NoExecute":
                continue
            matching = [t for t in tolerations if tolerates(t, taint.key, taint.value, taint.effect)]
            if any(t.toleration_seconds is None for t in matching):
                continue  # tolerated forever
            added = _parse(taint.time_added) or now
            at = added + timedelta(seconds=min(max(t.toleration_seconds, 0) for t in matching)) if matching else added
            when = at if when is None or at < when else when
    return when


def _claim_is_for(claim: ResourceClaim, pod: Pod) -> bool:
    """``resourceclaim.IsForPod`` with workload claims on: the claim was generated for this pod, or
    for the PodGroup the pod belongs to."""
    controller = claim.metadata.controller()
    if controller is None:
        return False
    group = pod.pod_group_name
    return controller.uid == pod.uid or bool(group and controller.kind == "PodGroup" and controller.name == group)


def pods_at_stake(claim: ResourceClaim, inventory: Inventory) -> list[Pod]:
    """The pods the eviction controller would delete for this claim: the scheduled pods that use it
    and are reserved, by UID or through their PodGroup (``podEvictionTime``, ``IsReservedForPod``)."""
    out = []
    for pod in inventory.pods_by_claim().get((claim.namespace, claim.name), []):
        if not pod.node_name or pod.metadata.deletion_timestamp is not None:
            continue
        if not is_reserved_for_pod(claim, pod):
            continue
        direct = any(pc.resource_claim_name == claim.name for pc in pod.spec.resource_claims)
        if not direct and not _claim_is_for(claim, pod):
            continue
        out.append(pod)
    return out


def _consumer(claim: ResourceClaim, taints: dict[Key, list[TaintView]], inventory: Inventory, now: datetime,
              dry_run: bool, unevaluated: list[UnevaluatedRule] = ()) -> ConsumerOutcome | None:
    """What the taints do to one claim's pods; None when no taint on its devices has an effect;
    ``Unknown`` when a taint of its devices or a toleration of its results did not validate, or a
    rule of ``unevaluated`` may select one of its devices."""
    label = f"{claim.namespace}/{claim.name}"
    keys = [(r.driver, r.pool, r.device) for r in claim.status.allocation.devices.results]
    _, _, unreadable = published_devices(inventory)
    unknown = next((unreadable[k] for k in keys if k in unreadable), None) or \
        next((rule.message for k in keys if (rule := first_unknown(unevaluated, k)) is not None), None)
    if unknown is None and not any(t.effect in ("NoSchedule", "NoExecute") for k in keys for t in taints.get(k, ())):
        return None
    if unknown is None and claim.invalid_fields and (bad := claim.invalid_under("status.allocation.devices")):
        unknown = f"ResourceClaim {claim.key}: {bad[0]} did not validate"
    pods = pods_at_stake(claim, inventory)
    names = sorted(f"{p.namespace}/{p.name}" for p in pods)
    if unknown is not None:
        return ConsumerOutcome(claim=label, pods=names, outcome="Unknown", unknown=unknown)
    when = eviction_time(claim, taints, now)
    if when is not None:
        outcome = "WouldEvict" if dry_run else ("Evicted" if when <= now else "EvictionPending")
        # a rule not applied yet has no timeAdded: "at once" unless a tolerationSeconds delays it
        at = None if dry_run and when <= now else _time(when)
        return ConsumerOutcome(claim=label, pods=names, outcome=outcome, evict_at=at)
    if any(t.effect == "NoSchedule" for k in keys for t in taints.get(k, ())):
        return ConsumerOutcome(claim=label, pods=names, outcome="BlocksNewAllocations")
    return ConsumerOutcome(claim=label, pods=names, outcome="Tolerated")


def explain_taints(inventory: Inventory, now: datetime | None = None, *, dry_run: DeviceTaintRule | None = None,
                   rules: list[DeviceTaintRule] | None = None) -> TaintExplanation:
    """Every tainted device and the claims and pods it touches; with ``dry_run``, only what that rule
    would add, as if it were applied now. A rule that cannot be evaluated is not applied: the devices
    it may select are shown ``unknown``, and ``problems`` (after the inventory's) names the rule."""
    now = now or datetime.now(timezone.utc)
    rules = list(rules if rules is not None else inventory.all(DeviceTaintRule))
    claims = [c for c in inventory.all(ResourceClaim) if c.status.allocation is not None]
    allocated: dict[Key, list[ResourceClaim]] = {}
    for claim in claims:
        for r in claim.status.allocation.devices.results:
            allocated.setdefault((r.driver, r.pool, r.device), []).append(claim)
    published, _, unreadable = published_devices(inventory)
    if dry_run is not None:
        rules = [r for r in rules if r.name != dry_run.name] + [dry_run]
    rules, unevaluated = split_rules(rules)
    taints = device_taints(inventory, rules, now, extra_keys=allocated)
    maybe = {key: rule.message for key in (*published, *allocated) if (rule := first_unknown(unevaluated, key))}
    result = TaintExplanation(dry_run=dry_run is not None, rule=dry_run.name if dry_run else None)
    shown = sorted({*taints, *maybe}) if dry_run is None else sorted(k for k in taints if rule_selects(dry_run, k))
    for key in shown:
        device = TaintedDevice(device="/".join(key), node=published.get(key), published=key in published,
                               taints=taints.get(key, []), unknown=unreadable.get(key) or maybe.get(key))
        if dry_run is not None:  # what the rule changes: judge the consumers with its taint alone added
            device.taints = [t for t in taints[key] if t.source == f"rule/{dry_run.name}"] + \
                            [t for t in taints[key] if t.source != f"rule/{dry_run.name}"]
        for claim in allocated.get(key, ()):
            consumer = _consumer(claim, taints, inventory, now, dry_run is not None, unevaluated)
            if consumer is not None:
                device.consumers.append(consumer)
        result.devices.append(device)
    result.findings = _findings(result, dry_run, published, inventory)
    result.problems = [p.message for p in inventory.problems] + [rule.message for rule in unevaluated]
    return result


def evicts(result: TaintExplanation) -> bool:
    """What makes ``taints`` exit 1: pods are (or, with --dry-run, would be) evicted, or an error
    finding (a rule whose empty deviceSelector selects every device)."""
    evicting = any(c.outcome in ("Evicted", "EvictionPending", "WouldEvict") for d in result.devices for c in d.consumers)
    return evicting or any(f.severity == "error" for f in result.findings)


def _consumer_finding(device: TaintedDevice, consumer: ConsumerOutcome) -> Finding | None:
    """What a device's taints do to one claim's pods, in words (None when they tolerate it)."""
    pods = f"pods {', '.join(consumer.pods)}" if consumer.pods else "no scheduled pod uses it, so no pod"
    if consumer.outcome in ("Evicted", "EvictionPending", "WouldEvict"):
        sources = ", ".join(sorted({t.source for t in device.taints if t.effect == "NoExecute"}))
        verb = {"Evicted": "are evicted (deleted) by the device taint eviction controller",
                "EvictionPending": f"will be evicted at {consumer.evict_at} (tolerationSeconds)",
                "WouldEvict": "would be evicted " + (f"at {consumer.evict_at} (tolerationSeconds)" if consumer.evict_at
                                                     else "as soon as the rule is applied")}[consumer.outcome]
        return Finding(code="DeviceTaintedNoExecute", severity="error", object=f"resourceclaim/{consumer.claim}",
                       message=f"device {device.device} of claim {consumer.claim} has a NoExecute taint "
                               f"({sources}): {pods} {verb}. If the taint is expected (maintenance), "
                               "tolerate it in the request (effect NoExecute, with tolerationSeconds "
                               "to delay); otherwise repair the device or remove the rule")
    if consumer.outcome == "Unknown":
        return Finding(code="DeviceTaintUnknown", severity="warning", object=f"resourceclaim/{consumer.claim}",
                       message=f"what the taints of device {device.device} do to claim {consumer.claim} is unknown, "
                               f"so whether {pods} are evicted or keep it is not concluded: {consumer.unknown}")
    if consumer.outcome == "BlocksNewAllocations":
        return Finding(code="DeviceTaintedNoSchedule", severity="warning", object=f"resourceclaim/{consumer.claim}",
                       message=f"device {device.device} of claim {consumer.claim} has a NoSchedule "
                               + (f"taint: pods {', '.join(consumer.pods)} keep it, but once released"
                                  if consumer.pods else "taint: no scheduled pod uses it; once released,")
                               + " no new claim gets it")
    return None


def _findings(result: TaintExplanation, dry_run, published, inventory: Inventory) -> list[Finding]:
    findings: list[Finding] = []
    if dry_run is not None:
        selector = dry_run.spec.device_selector
        at_stake = {p for d in result.devices for c in d.consumers if c.outcome == "WouldEvict" for p in c.pods}
        if selector is None:
            findings.append(Finding(code="DeviceTaintRuleSelectsNothing", severity="warning",
                                    message=f"rule {dry_run.name} has no deviceSelector: it selects no device"))
        elif selector.driver is None and selector.pool is None and selector.device is None:
            findings.append(Finding(code="DeviceTaintRuleTooBroad", severity="error", message=(
                f"rule {dry_run.name} has an empty deviceSelector ({{}}): it selects every device of the cluster "
                f"({plural(len(published), 'published device')}) and with {dry_run.spec.taint.effect or 'its effect'} "
                f"puts {plural(len(at_stake), 'pod')} at stake (kubernetes#141422: such a rule evicted every DRA pod "
                "of a cluster). Set driver, pool or device")))
        elif len({k[:2] for k in published}) > 1 and all(rule_selects(dry_run, k) for k in published):
            findings.append(Finding(code="DeviceTaintRuleTooBroad", severity="error", message=(
                f"rule {dry_run.name} selects every published device of the cluster ({len(published)}, in "
                f"{len({k[:2] for k in published})} pools) and puts "
                f"{plural(len(at_stake), 'pod')} at stake: narrow it to the pool or device you mean")))
        if dry_run.spec.taint.effect not in ("None", "NoSchedule", "NoExecute"):
            findings.append(Finding(code="DeviceTaintRuleInvalid", severity="error", message=(
                f"rule {dry_run.name}: effect {dry_run.spec.taint.effect!r} is not None, NoSchedule or NoExecute "
                "(the API server rejects it)")))
    for device in result.devices:
        for consumer in device.consumers:
            finding = _consumer_finding(device, consumer)
            if finding is not None:
                findings.append(finding)
    findings += health_findings(inventory.all(Pod))
    return findings


def device_health(pods: Iterable[Pod]) -> list[tuple[Pod, str, str, str, str, str]]:
    """What kubelets report of allocated devices: (pod, container, status name, resource ID,
    health, message) from ``containerStatuses[].allocatedResourcesStatus``."""
    out = []
    for pod in pods:
        for status in pod.status.container_statuses:
            for entry in status.allocated_resources_status:
                for resource in entry.resources:
                    out.append((pod, status.name, entry.name, resource.resource_id, resource.health,
                                resource.message or ""))
    return out


def health_findings(pods: Iterable[Pod], pod_claim: str | None = None) -> list[Finding]:
    """``DeviceUnhealthy`` for every device a kubelet reports Unhealthy in ``pods`` (``pod_claim``:
    only the entries of this pod claim name)."""
    findings = []
    for pod, container, name, resource_id, health, message in device_health(pods):
        if health != "Unhealthy":
            continue
        claim_name = name.removeprefix("claim:").split("/")[0]
        if pod_claim is not None and claim_name != pod_claim:
            continue
        findings.append(Finding(code="DeviceUnhealthy", severity="warning", object=f"pod/{pod.namespace}/{pod.name}",
                                message=f"the kubelet reports device {resource_id} of pod {pod.namespace}/{pod.name} "
                                        f"(container {container}, {name}) Unhealthy"
                                        + (f": {message}" if message else "")
                                        + ". Its driver decides whether to taint it; check the driver's logs and the "
                                          "device, and move the workload if it keeps failing"))
    return findings


def claim_taints(claim: ResourceClaim, inventory: Inventory, now: datetime | None = None
                 ) -> tuple[dict[Key, list[TaintView]], list[Finding]]:
    """For an allocated claim: the taints on each of its devices, and the findings (NoExecute:
    eviction and when; NoSchedule: blocks new allocations; Unhealthy devices its pods report)."""
    now = now or datetime.now(timezone.utc)
    keys = [(r.driver, r.pool, r.device) for r in claim.status.allocation.devices.results] \
        if claim.status.allocation else []
    applied, unevaluated = split_rules(inventory.all(DeviceTaintRule))
    taints = taints_of(inventory, applied, now, keys) if keys else {}
    mine = {k: taints[k] for k in keys if k in taints}
    findings: list[Finding] = []
    unknown = next((k for k in keys if first_unknown(unevaluated, k)), None)
    consumer = _consumer(claim, mine, inventory, now, False, unevaluated) if mine or unknown else None
    if consumer is not None:  # named after its first tainted device (or the one a rule may taint)
        first = unknown if not mine or (consumer.outcome == "Unknown" and unknown) else next(iter(mine))
        finding = _consumer_finding(TaintedDevice(device="/".join(first), taints=mine.get(first, [])), consumer)
        if finding is not None:
            findings.append(finding)
    for pod in inventory.pods_by_claim().get((claim.namespace, claim.name), []):
        for pc in pod.spec.resource_claims:
            if pod.claim_object_name(pc) == claim.name:
                findings += health_findings([pod], pc.name)
    return mine, findings


def taint_versions(versions: Versions) -> Versions:
    """Which eviction controller the answer follows: before 1.36 kube-controller-manager evicts nothing
    for device taints (DRADeviceTaints alpha and off: the API server keeps none either)."""
    note(versions, CONTROLLER_MANAGER, versions.scheduler_minor())
    return versions
