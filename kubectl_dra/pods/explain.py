"""``kubectl dra explain pod``: claims -> devices -> DRA amounts -> pod and container cgroups."""
from __future__ import annotations

from kubectl_dra.allocatable.entries import ClaimEntry, compare, compute_entry, from_status, pod_claim_objects
from kubectl_dra.allocatable.requests import container_dra, difference, pod_requests
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.predict import predict_pod
from kubectl_dra.claims.findings import where_missing
from kubectl_dra.model.claim import is_reserved_for_pod
from kubectl_dra.document import Finding
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.pools.slices import slice_device
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.taints.explain import claim_taints, health_findings
from kubectl_dra.pods.document import CgroupsView, ClaimAmounts, PodExplanation, PodRef, SchedulerView
from kubectl_dra.versions import KUBELET, SCHEDULER, Versions, known, minor_of, note


def _amounts(entry: ClaimEntry, devices: list[str], kubelet: bool) -> ClaimAmounts:
    return ClaimAmounts(
        name=entry.name, pod_claim_name=entry.pod_claim_name, containers=entry.containers,
        mapping={k: str(v) for k, v in entry.mapping.items()},
        overhead={k: {n: str(q) for n, q in (("perPod", o.per_pod), ("perContainer", o.per_container)) if q is not None}
                  for k, o in entry.overhead.items()},
        resources={k: str(v) for k, v in entry.resources.items()},
        source=entry.source, generation=entry.generation, devices=devices,
        kubelet_applies=kubelet and entry.source == "podStatus" and entry.generation == "v1.37",
    )


def explain_pod(pod: Pod, inventory: Inventory, options: NodeOptions,
                options_source: dict[str, str] | None = None) -> PodExplanation:
    findings: list[Finding] = []
    ref = f"pod/{pod.namespace}/{pod.name}"

    def add(code: str, severity: str, message: str, obj: str = ref) -> None:
        findings.append(Finding(code=code, severity=severity, message=message, object=obj))

    recorded = {s.resource_claim_name: from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses}
    objects = pod_claim_objects(pod)
    for pod_claim, object_name in pod.referenced_claim_names().items():
        if object_name is None and pod_claim != "<extended-resources>":
            add("ClaimNotCreated", "info" if not pod.node_name else "warning",
                f"pod claim {pod_claim} has no ResourceClaim yet (status.resourceClaimStatuses has no name for it)")

    claims: list[ClaimAmounts] = []
    for name, pod_claim_names in objects.items():
        claim = inventory.get(ResourceClaim, pod.namespace, name)
        if claim is None:
            add("ClaimMissing", "warning", f"ResourceClaim {pod.namespace}/{name} (pod claim "
                f"{', '.join(pod_claim_names)}) is not in the data read; its devices and amounts are unknown")
            if name in recorded:
                entry = recorded[name]
                entry.pod_claim_name = pod_claim_names[0]
                claims.append(_amounts(entry, [], options.kubelet_dra))
            continue
        devices = [f"{r.driver}/{r.pool}/{r.device}" for r in
                   (claim.status.allocation.devices.results if claim.status.allocation else [])]
        for result in claim.status.allocation.devices.results if claim.status.allocation else []:
            if slice_device(inventory, result.driver, result.pool, result.device)[1] is None \
                    and "ResourceSlice" in inventory.read_kinds:
                add("AllocatedDeviceMissing", "error", f"device {result.driver}/{result.pool}/{result.device} "
                    f"of claim {name} is {where_missing(inventory, result.driver, result.pool, result.device)}; "
                    "its node-allocatable amounts cannot be recomputed", f"resourceclaim/{pod.namespace}/{name}")
        _blocking_findings(pod, claim, pod_claim_names, add)
        computed, problems, unknown = compute_entry(pod, claim, inventory, pod_claim_names)
        findings.extend(problems)
        if unknown:
            add("NodeAllocatableUnknown", "warning",
                f"claim {name}: its node-allocatable amounts cannot be recomputed, because of invalid fields "
                f"({'; '.join(unknown)}); nothing is concluded from them", f"resourceclaim/{pod.namespace}/{name}")
        if name in recorded:
            entry = recorded[name]
            entry.pod_claim_name = pod_claim_names[0]
            claims.append(_amounts(entry, devices, options.kubelet_dra))
            if computed is not None:
                diffs = compare(entry, computed)
                if diffs:
                    add("NodeAllocatableStatusMismatch", "error",
                        f"claim {name}: the pod status does not match the allocated devices: {'; '.join(diffs)}. "
                        "The kubelet enforces the recorded values.")
            elif not unknown and "ResourceSlice" in inventory.read_kinds and claim.allocated:
                # not a mismatch we can show (nothing to compare with): the devices' mappings are gone
                add("NodeAllocatableMappingGone", "warning",
                    f"claim {name} has a status entry but none of its allocated devices declares node-allocatable "
                    "resources now; the kubelet enforces the recorded values")
        elif computed is not None and not computed.is_empty():
            claims.append(_amounts(computed, devices, False))
            if pod.node_name and not is_reserved_for_pod(claim, pod):
                add("PodNotScheduled", "info", f"claim {name}: amounts are computed; the scheduler never placed this "
                    "pod (it is not in the claim's reservedFor), so nothing was recorded and the kubelet applies "
                    "nothing")
            elif pod.node_name:
                add("NodeAllocatableGateOff", "warning",
                    f"claim {name}'s devices declare node-allocatable resources, but the pod status has no entry for "
                    "it: kube-scheduler did not account them (DRANodeAllocatableResources off there?) and the kubelet "
                    "will not enforce them. The amounts shown are computed.")
            else:
                add("PodNotScheduled", "info", f"claim {name}: amounts are computed; the scheduler records them "
                    "in the pod status when it binds the pod")
        if computed is not None and computed.mapping:
            consumers = len(claim.status.reserved_for)
            if consumers > 1:
                add("MappedClaimShared", "error",
                    f"claim {name} has a device mapped to node {', '.join(sorted(computed.mapping))} and is reserved "
                    f"for {consumers} consumers; such a claim may serve one pod only",
                    f"resourceclaim/{pod.namespace}/{name}")

    for name, entry in recorded.items():
        if name not in objects:
            add("NodeAllocatableStatusUnreferenced", "error",
                f"status.nodeAllocatableResourceClaimStatuses names claim {name}, which the pod does not reference; "
                "the API server should have rejected it")
            claims.append(_amounts(entry, [], options.kubelet_dra))
        elif entry.generation == "v1.36":
            add("NodeAllocatableNotEnforced", "info",
                f"claim {name} is recorded in the 1.36 shape (resources); that kubelet accounts it for admission "
                "but does not change cgroups")

    status_entries = list(recorded.values())
    kubelet_entries = [e for e in status_entries if e.generation == "v1.37" and e.name in objects]
    prediction = predict_pod(pod, kubelet_entries, options, explain=True)
    if prediction.unknown:
        add("PodValuesUnknown", "warning", f"{prediction.unknown}; fix the object (see the problems on stderr)")
        scheduler = SchedulerView(note=f"unknown: {prediction.unknown}")
    else:
        _limit_findings(pod, prediction, kubelet_entries, options, add)
        _pod_level_findings(pod, status_entries, add)
        if prediction.qos_class == "BestEffort" and any(e.mapping.get("cpu") or e.mapping.get("memory")
                                                        for e in kubelet_entries):
            add("DRAOnBestEffortPod", "info", "the pod is BestEffort by its spec; DRA amounts never change QoS, so "
                "the pod keeps minimum cpu shares and no limits although its claims map cpu or memory")
        with_dra, spec = pod_requests(pod, status_entries), pod_requests(pod)
        scheduler = SchedulerView(
            requests={k: str(v) for k, v in sorted(with_dra.items())},
            dra={k: str(v) for k, v in sorted(difference(with_dra, spec).items())},
            note=None if with_dra else "nothing: no container requests anything and no claim adds an amount "
                                       "(the scheduler still counts the pod against the node's pod capacity)")
    findings += _device_findings(pod, inventory)
    return PodExplanation(
        pod=PodRef(namespace=pod.namespace or "", name=pod.name, uid=pod.uid, node=pod.node_name,
                   qos_class=prediction.qos_class, phase=pod.status.phase or None),
        claims=claims, scheduler=scheduler,
        cgroups=CgroupsView(pod=prediction.pod, containers=prediction.containers,
                            exclusive_cpus=prediction.exclusive_cpus, unknown=prediction.unknown),
        findings=findings, node_options=options, node_options_source=options_source or {},
        problems=[p.message for p in inventory.problems],
    )


def _blocking_findings(pod: Pod, claim: ResourceClaim, pod_claim_names: list[str], add) -> None:
    """What the kubelet checks before it prepares a claim for a pod bound to it (dra manager): the
    claim belongs to the pod, is reserved for it, and is allocated (on the pod's node)."""
    if not pod.node_name or pod.is_done:
        if not claim.allocated and not pod.node_name:
            add("ClaimNotAllocated", "info", f"claim {claim.name} is not allocated yet: the scheduler allocates it "
                "when it finds a node for the pod", f"resourceclaim/{pod.namespace}/{claim.name}")
        return
    ref = f"resourceclaim/{pod.namespace}/{claim.name}"
    templated = any(pc.resource_claim_template_name for pc in pod.spec.resource_claims if pc.name in pod_claim_names)
    owner = claim.metadata.controller()
    group = pod.pod_group_name
    if templated and owner is not None and owner.uid != pod.uid and not (
            owner.kind == "PodGroup" and owner.api_version.startswith("scheduling.k8s.io/") and owner.name == group):
        add("ClaimNotOwned", "error", f"claim {claim.name} was generated from a template but is owned by "
            f"{owner.kind.lower()}/{owner.name}, not by this pod or its PodGroup: the kubelet refuses it (\"ResourceClaim "
            f"{claim.name} was not created for pod {pod.name} (pod is not owner)\")", ref)
    if not is_reserved_for_pod(claim, pod):
        add("ReferencedButNotReserved", "error",
            f"the pod is bound to {pod.node_name} but claim {claim.name} does not list it in reservedFor, so the "
            f"kubelet stops at \"pod {pod.name} ({pod.uid}) is not allowed to use ResourceClaim {claim.name} "
            f"({claim.uid})\" and the pod stays in ContainerCreating. The scheduler reserves a claim when it binds "
            "the pod: a pod bound by something else (spec.nodeName set directly) never gets the reservation. "
            "Delete the pod and let the scheduler place it.", ref)
    if not claim.allocated:
        add("ClaimNotAllocated", "error", f"the pod is bound to {pod.node_name} but claim {claim.name} is not "
            "allocated: the kubelet cannot prepare it (\"not allocated\"). Pods that skip the scheduler get no "
            "allocation; delete the pod and let the scheduler place it.", ref)
    elif claim.node_name and claim.node_name != pod.node_name:
        add("ClaimOnOtherNode", "error", f"claim {claim.name} is allocated on {claim.node_name}, but the pod is bound "
            f"to {pod.node_name}: its devices are not there", ref)


def _limit_findings(pod: Pod, prediction, entries: list[ClaimEntry], options: NodeOptions, add) -> None:
    """DRA cpu/memory that no cgroup limit carries, because the limit is undeclared."""
    if not options.kubelet_dra:
        return
    for resource, file in (("cpu", "cpu.max"), ("memory", "memory.max")):
        if not any(resource in e.mapping or resource in e.overhead for e in entries):
            continue
        unlimited = prediction.pod.files[file].startswith("max")
        if unlimited:
            add("DRALimitNotEnforced", "info",
                f"the claims add {resource} to the pod, but not every container declares a {resource} limit, so the "
                f"pod {file} stays unlimited and the DRA {resource} is only a request")


def _pod_level_findings(pod: Pod, entries: list[ClaimEntry], add) -> None:
    """validatePodLevelResourcesCoverDRA: pod-level resources must cover containers plus DRA."""
    plr = pod.spec.resources
    if plr is None or not entries:
        return
    with_dra = pod_requests(pod.model_copy(update={"spec": pod.spec.model_copy(update={"resources": None})}),
                            entries, include_overhead=False)
    for name, q in plr.requests.items():
        if name in with_dra and with_dra[name] > q:
            add("PodLevelResourcesInsufficient", "error",
                f"pod level request for {name} is {q} but containers plus DRA need {with_dra[name]}; the scheduler "
                "rejects the pod")
    for container in pod.all_containers():
        dra = container_dra(entries, container.name)
        for name, q in plr.limits.items():
            own = container.resources.limits.get(name)
            if own is not None and name in dra and own + dra[name] > q:
                add("PodLevelResourcesInsufficient", "error",
                    f"pod level limit for {name} ({q}) is insufficient to cover the limit and DRA overhead for "
                    f"container {container.name} ({own} + {dra[name]})")


def _device_findings(pod: Pod, inventory: Inventory) -> list[Finding]:
    """Taints on the devices of the pod's allocated claims (what they do to it) and the devices its
    kubelet reports Unhealthy."""
    out: list[Finding] = []
    for name in sorted({n for n in pod.referenced_claim_names().values() if n}):
        claim = inventory.get(ResourceClaim, pod.namespace, name)
        if claim is None or claim.status.allocation is None:
            continue
        _, found = claim_taints(claim, inventory)
        out += [f for f in found if f.code != "DeviceUnhealthy"]
    out += health_findings([pod])
    return out


def pod_versions(versions: Versions, pod: Pod, result: PodExplanation, options: NodeOptions) -> Versions:
    """The releases this answer follows: for a pod on a node its kubelet's (the cgroup rules), for a
    pod not bound the scheduler's (the API server's release); what was applied instead of 1.37's rule
    and what is not claimed (docs/kubernetes/versions.md)."""
    scheduling = result.scheduling
    if scheduling is not None:
        # start-up: pending - the scheduler's parts, for a pod not bound to a node
        from kubectl_dra.scheduling.document import NotEvaluated
        from kubectl_dra.scheduling.resources import is_extended_resource_name

        release = versions.scheduler_minor()
        if versions.api_server is not None and not known(release):
            scheduling.not_evaluated.append(NotEvaluated(plugin="release", why=(
                f"the API server runs {versions.api_server}, a release whose scheduler kubectl-dra does not model "
                f"(1.34 to 1.37): its filters and words may differ")))
            scheduling.message, scheduling.message_known = None, False
        rules = {"NodeDeclaredFeatures", "DRA PostFilter"} if scheduling.message else {"NodeDeclaredFeatures"}
        if any(is_extended_resource_name(name) for c in pod.all_containers() for name in c.resources.requests):
            rules.add("DRAExtendedResource")
        if any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes):
            rules.add("VolumeLimitScaling")
        note(versions, SCHEDULER, release, rules)
        versions.not_known += [u.why for u in scheduling.not_evaluated
                               if u.why.startswith("kube-scheduler 1.") and u.why not in versions.not_known]
    if pod.node_name and options.kubelet_version:
        rules = {"systemd quota"} if options.cgroup_driver == "systemd" else set()
        if result.claims:
            rules.add("DRA in cgroups")
        if pod.spec.init_containers:
            rules.add("limits declared")
        if options.memory_qos != "off":
            rules.add("Memory QoS")
        note(versions, KUBELET, minor_of(options.kubelet_version), rules)
    return versions
