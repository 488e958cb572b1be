"""Findings about one claim: stable codes, each saying what is wrong and what to do next."""

from __future__ import annotations

from kubectl_dra.claims.reservations import ConsumerView, ReservationView
from kubectl_dra.claims.views import DeviceView
from kubectl_dra.document import Finding
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.pools.slices import outdated_generation
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import RESERVED_FOR_MAX, ResourceClaim
from kubectl_dra.model.node import Node
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.extended import class_resolver, is_extended_claim
from kubectl_dra.text import plural

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
NEAR_LIMIT = 0.9


def _stale_reason(view: ReservationView) -> str | None:
    if view.resolved == "missing":
        return f"pod {view.name} (uid {view.uid}) no longer exists"
    if view.resolved == "uidMismatch":
        return f"pod {view.name} was replaced: the entry holds uid {view.uid}, the pod now has another uid"
    if view.resolved == "done":
        return f"pod {view.name} has finished"
    return None


def _flaps(view: ReservationView, claim: ResourceClaim, reservations: list[ReservationView],
           stale: list[ReservationView], referencing: set[str]) -> bool:
    """A finished pod the v1.37 controller re-reserves (kubernetes/kubernetes#141274): its syncPod
    reserves an allocated claim for any bound, undeleted pod that references it, finished or not,
    while its claim sync removes finished pods; they alternate as long as another consumer keeps
    the claim allocated (with none left, the removal deallocates it and the loop ends)."""
    return (view.resolved == "done" and bool(view.node) and not view.deleting
            and claim.status.allocation is not None and f"{claim.namespace}/{view.name}" in referencing
            and any(v is not view and v not in stale for v in reservations))


def where_missing(inventory: Inventory, driver: str, pool: str, device: str) -> str:
    """Where an allocated device that no current slice lists went: an outdated generation, or nowhere."""
    outdated = outdated_generation(inventory, driver, pool, device)
    if outdated:
        return (f"only in an outdated generation ({outdated[0]}) of pool {pool}, whose current generation "
                f"{outdated[1]} no longer lists it")
    return "in no ResourceSlice"


def claim_findings(claim: ResourceClaim, devices: list[DeviceView], reservations: list[ReservationView],
                   users: list[ConsumerView], inventory: Inventory) -> list[Finding]:
    found: list[Finding] = []
    ref = f"resourceclaim/{claim.namespace}/{claim.name}"

    def add(code: str, severity: str, message: str) -> None:
        found.append(Finding(code=code, severity=severity, message=message, object=ref))

    stale = [v for v in reservations
             if (_stale_reason(v) if v.resource == "pods" else v.resolved in ("missing", "uidMismatch"))]
    referencing = {u.pod for u in users}
    for view in reservations:
        if view.resource == "pods":
            reason = _stale_reason(view)
            if reason and _flaps(view, claim, reservations, stale, referencing):
                add("StaleReservation", "warning",
                    f"reservedFor entry pod/{view.name}: {reason}, but it still exists on node {view.node} and "
                    "references the claim, which another consumer keeps allocated. The resourceclaim controller "
                    "of Kubernetes v1.37 removes this entry and adds it back, over and over "
                    "(kubernetes/kubernetes#141274): the entry comes and goes and the claim's status is rewritten "
                    f"continuously. Deleting the finished pod {claim.namespace}/{view.name} ends it.")
            elif reason:
                add("StaleReservation", "warning",
                    f"reservedFor entry pod/{view.name}: {reason}. The resourceclaim controller in "
                    "kube-controller-manager should remove it; if it stays, check that controller's logs.")
        elif view.resource == "podgroups":
            if view.resolved in ("missing", "uidMismatch"):
                why = "no longer exists" if view.resolved == "missing" else \
                    f"was replaced: the entry holds uid {view.uid}, the PodGroup now has another uid"
                add("StaleReservation", "warning",
                    f"reservedFor entry podgroup/{view.name}: the PodGroup {why}. The resourceclaim controller "
                    "in kube-controller-manager should remove it (with DRAWorkloadResourceClaims on; KEP-5729).")
            elif view.deleting:
                add("PodGroupDeleting", "info",
                    f"PodGroup {view.name} is being deleted; its reservation (and the devices) are released "
                    f"once its {plural(len(view.pods), 'member pod')} {'has' if len(view.pods) == 1 else 'have'} finished.")
        elif view.resolved in ("missing", "uidMismatch"):
            why = "no longer exists" if view.resolved == "missing" else "was replaced (another uid)"
            add("StaleReservation", "warning",
                f"reservedFor entry {view.resource}/{view.name}: the object {why}; the controller that added "
                "it should remove it (kube-controller-manager keeps entries of kinds it does not know).")

    if claim.allocated and reservations and len(stale) == len(reservations):
        add("DeallocationBlocked", "error",
            f"every reservation ({len(stale)}) is stale, so the devices stay allocated to nobody. Once the "
            "entries are removed the claim is deallocated; if kube-controller-manager does not do it, "
            "its resourceclaim controller is not running or cannot update this claim.")

    if len(reservations) >= NEAR_LIMIT * RESERVED_FOR_MAX:
        add("ReservedForNearLimit", "warning" if len(reservations) < RESERVED_FOR_MAX else "error",
            f"{len(reservations)} of {RESERVED_FOR_MAX} reservedFor entries are used; further pods cannot use "
            "this claim. Share it through a PodGroup reservation or split the workload over several claims.")

    for user in users:
        if user.reserved or user.phase in ("Succeeded", "Failed"):
            continue
        if user.node and claim.allocated:
            add("ReferencedButNotReserved", "error",
                f"pod {user.pod} on {user.node} uses the claim but is not in reservedFor; the kubelet will refuse "
                f"it with \"is not allowed to use ResourceClaim\". The scheduler reserves claims when it binds "
                "a pod: a pod bound by something else (nodeName set directly) never gets the reservation.")

    mapped = [d for d in devices if d.node_allocatable]
    pod_entries = [v for v in reservations if v.resource == "pods" and v.resolved in ("exists", "done")]
    if mapped and len(pod_entries) + sum(1 for v in reservations if v.resource == "podgroups") > 1:
        add("MappedClaimShared", "error",
            f"device {mapped[0].driver}/{mapped[0].pool}/{mapped[0].device} maps to node allocatable "
            "(cpu/memory/hugepages), so the claim may serve one pod only; it is reserved for "
            f"{len(reservations)} consumers. Give each pod its own claim (a ResourceClaimTemplate).")

    for device in devices:
        if not device.found and "ResourceSlice" in inventory.read_kinds:
            where = where_missing(inventory, device.driver, device.pool, device.device)
            add("AllocatedDeviceMissing", "error",
                f"allocated device {device.driver}/{device.pool}/{device.device} is {where}: the "
                "driver stopped publishing it or the node is gone. Pods using it cannot start; delete and "
                "recreate the claim (or its pods) to allocate again.")

    if claim.deleted and claim.allocated:
        holders = f" (finalizer {DELETE_PROTECTION})" if DELETE_PROTECTION in claim.metadata.finalizers else ""
        add("DeletedButAllocated", "warning",
            f"the claim was deleted but is still allocated{holders}; it disappears once no pod is reserved "
            "and the devices are released.")

    if not claim.allocated and not claim.deleted and not users and "Pod" in inventory.read_kinds:
        add("PendingNoConsumers", "info",
            "no pod references this claim, so nothing asks the scheduler to allocate it.")

    if devices and any(d.node_allocatable or d.node_allocatable_overhead for d in devices):
        for view in pod_entries:
            pod = inventory.by_uid(view.uid)
            if isinstance(pod, Pod) and not any(
                    s.resource_claim_name == claim.name for s in pod.status.node_allocatable_resource_claim_statuses):
                add("NodeAllocatableGateOff", "warning",
                    f"the allocated device declares node-allocatable resources but pod {pod.key} has no "
                    "status.nodeAllocatableResourceClaimStatuses entry for this claim: the "
                    "DRANodeAllocatableResources gate is probably off in kube-scheduler, so the node "
                    "is overcommitted by the device's amounts.")
    found += extended_findings(claim, inventory)
    return found


def extended_findings(claim: ResourceClaim, inventory: Inventory) -> list[Finding]:
    """For a claim the scheduler made for a pod's extended resources (KEP-5004): its class is gone,
    another class names the same resource, or its node now advertises the resource itself."""
    if not is_extended_claim(claim) or "DeviceClass" not in inventory.read_kinds:
        return []
    found = []
    ref = f"resourceclaim/{claim.namespace}/{claim.name}"
    classes = {c.name: c for c in inventory.all(DeviceClass)}
    resolver = class_resolver(classes.values())
    wanted = sorted({r.exactly.device_class_name for r in claim.spec.devices.requests if r.exactly is not None})
    for name in wanted:
        klass = classes.get(name)
        if klass is None:
            found.append(Finding(code="ExtendedResourceClassMissing", severity="warning", object=ref, message=(
                f"DeviceClass {name}, through which the scheduler made this claim for the pod's extended resources, "
                "no longer exists. The allocation stays until the pod ends, but the scheduler no longer serves the "
                "resource through DRA: new pods asking for it fit only nodes that advertise it in their allocatable")))
            continue
        resource = klass.spec.extended_resource_name
        if not resource:
            continue
        rivals = sorted(c.name for c in classes.values() if c.spec.extended_resource_name == resource)
        if len(rivals) > 1:
            winner = resolver.get(resource)
            found.append(Finding(code="ExtendedResourceNameClash", severity="warning", object=ref, message=(
                f"DeviceClasses {', '.join(rivals)} all name extended resource {resource}; the scheduler serves it "
                f"through the newest, {winner.name if winner else 'unknown'}. Deleting any one of them drops the name "
                "from the scheduler's cache whichever class held it (until kube-scheduler restarts): give each "
                "resource one class")))
        node_name = claim.status.allocation.node_name() if claim.status.allocation else None
        node = inventory.get(Node, None, node_name) if node_name else None
        if node is not None and (q := node.status.allocatable.get(resource)) is not None and not q.is_zero():
            found.append(Finding(code="ExtendedResourceBothWays", severity="warning", object=ref, message=(
                f"node {node_name} advertises {resource}: {q} in its allocatable (a device plugin) and publishes "
                f"devices of class {name} for it. The scheduler serves {resource} there from the allocatable only, "
                "so new pods do not get these DRA devices, and the same hardware may be counted twice")))
    return found
