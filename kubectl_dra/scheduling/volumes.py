"""kube-scheduler v1.37.2's volume filters: VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone (``pkg/scheduler/framework/plugins/{volumerestrictions,nodevolumelimits,volumebinding,
volumezone}``), with the scheduler's words and codes.

A pod without the volumes a plugin looks at is a PreFilter Skip decided from its spec alone (no
lookup). Whatever depends on something this tool does not model (CSIStorageCapacity, in-tree to
CSI translation, the scheduler's random map order) or on a kind that was not read is
:meth:`Status.unknown`, never a fit. Feature gates are v1.37.2's defaults (VolumeLimitScaling and
VolumeAttributesClass on, InPlacePodVerticalScalingSchedulerPreemption off).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from kubectl_dra.model.pod import LabelSelector, Pod, Volume
from kubectl_dra.model.storage import (IN_TREE_SOURCES, CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim,
                                       StorageClass, VolumeAttachment)
from kubectl_dra.pools.nodeselector import NodeSelectorError, node_selector_matches
from kubectl_dra.scheduling.framework import (UNRESOLVABLE, Cycle, Evidence, NodeInfo, Plugin, PodInfo,
                                              PreFilterResult, Status)
from kubectl_dra.versions import SCHEDULER, older

# volumerestrictions/volume_restrictions.go
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
# volumerestrictions/volume_restrictions.go
ERR_REASON_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                            "already in-use by another pod")
# volumezone/volume_zone.go
ERR_REASON_VOLUME_ZONE_CONFLICT = "node(s) had no available volume zone"
# nodevolumelimits/csi.go
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
# nodevolumelimits/csi.go (VolumeLimitScaling, on by default from v1.37: docs/kubernetes/versions.md §4.2)
ERR_DRIVER_NOT_INSTALLED = "{driver} CSI driver is not installed on the node"
# volumebinding/binder.go
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
# volumebinding/binder.go
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
# volumebinding/binder.go (only with CSIStorageCapacity, which this tool reports as not evaluated)
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
# volumebinding/binder.go
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
# volumebinding/volume_binding.go
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# volumebinding/volume_binding.go (podHasPVCs)
ERR_WAITING_EPHEMERAL = 'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
ERR_CLAIM_LOST = 'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
ERR_CLAIM_DELETING = 'persistentvolumeclaim "{name}" is being deleted'
# component-helpers storage/ephemeral/ephemeral.go (VolumeIsForPod)
ERR_NOT_OWNER = "PVC {pvc_ns}/{pvc} was not created for pod {pod_ns}/{pod} (pod is not owner)"
# component-helpers storage/volume/pv_helpers.go (IsDelayBindingMode) and volumezone/volume_zone.go
ERR_BINDING_MODE_NOT_SET = 'VolumeBindingMode not set for StorageClass "{name}"'
# volumebinding/binder.go (checkVolumeProvisions; returned as errors)
ERR_NO_CLASS = 'no class for claim "{key}"'
ERR_CLASS_NOT_FOUND = 'failed to find storage class "{name}"'
# volumezone/volume_zone.go
ERR_ZONE_PVC_NO_NAME = "PersistentVolumeClaim had no name"
ERR_ZONE_NO_PV_NO_CLASS = "PersistentVolumeClaim had no pv name and storageClass name"
ERR_ZONE_PV_NO_NAME = "PersistentVolume had no name"
# nodevolumelimits/csi.go (filterAttachableVolumes)
ERR_LIMITS_PVC_NO_NAME = "PersistentVolumeClaim had no name"
ERR_LIMITS_LOOKUP = "looking up PVC {ns}/{name}: {err}"
# client-go listers: apierrors.NewNotFound(<group resource>, name).Error()
NOT_FOUND = '{resource} "{name}" not found'

PVC_RESOURCE, PV_RESOURCE, SC_RESOURCE = "persistentvolumeclaim", "persistentvolume", "storageclass.storage.k8s.io"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

# csi-translation-lib: in-tree plugin -> CSI driver; and the plugins whose migration is on
# (isCSIMigrationOnForPlugin / nodevolumelimits isCSIMigrationOn).
CSI_DRIVER_OF = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com", "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com", "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org", "kubernetes.io/portworx-volume": "pxd.portworx.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
}
MIGRATION_ON = frozenset({"kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk",
                          "kubernetes.io/cinder", "kubernetes.io/portworx-volume"})
INLINE_MIGRATABLE = frozenset(IN_TREE_SOURCES)  # the pod volume keys csi-translation-lib translates inline

# volumezone/volume_zone.go topologyLabels, in upstream's order
TOPOLOGY_LABELS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
                   "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_TO_GA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
          "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


class _Unknown(Exception):
    """This tool cannot decide (carried up to a :meth:`Status.unknown`)."""


class _Error(Exception):
    """The scheduler fails with an error here (``fwk.AsStatus``)."""


class _Rejected(Exception):
    """The scheduler rejects with UnschedulableAndUnresolvable and this message."""


def _not_found(resource: str, name: str) -> str:
    return NOT_FOUND.format(resource=resource, name=name)


def _missing_kinds(cycle: Cycle, *kinds: str) -> list[str]:
    read = cycle.inventory.read_kinds if cycle.inventory is not None else set()
    return [k for k in kinds if k not in read]


def _require(cycle: Cycle, *kinds: str) -> None:
    missing = _missing_kinds(cycle, *kinds)
    if missing:
        raise _Unknown(f"{', '.join(missing)} {'was' if len(missing) == 1 else 'were'} not read")


def _checked(obj):
    """An object whose fields all validated; one with dropped fields cannot be judged."""
    if obj is not None and obj.invalid_fields:
        raise _Unknown(f"{obj.KIND} {obj.key}: {obj.invalid_fields[0].path} did not validate")
    return obj


def _pvc(cycle: Cycle, namespace: str | None, name: str) -> PersistentVolumeClaim | None:
    return _checked(cycle.inventory.get(PersistentVolumeClaim, namespace, name))


def _pv(cycle: Cycle, name: str) -> PersistentVolume | None:
    return _checked(cycle.inventory.get(PersistentVolume, None, name))


def _class(cycle: Cycle, name: str) -> StorageClass | None:
    return _checked(cycle.inventory.get(StorageClass, None, name))


def _check_pod(pod: Pod) -> None:
    if pod.invalid_fields and pod.invalid_under("spec.volumes"):
        raise _Unknown(f"pod {pod.key}: {pod.invalid_under('spec.volumes')[0]} did not validate")


def _claim_name(pod: Pod, volume: Volume) -> tuple[str, bool] | None:
    """(PVC name, is generic ephemeral) of a volume backed by a PVC, None for any other volume."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name, False
    if volume.ephemeral is not None:
        return f"{pod.name}-{volume.name}", True  # ephemeral.VolumeClaimName
    return None


def _not_owner(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """``ephemeral.VolumeIsForPod``: the PVC must be controlled by the pod."""
    ctl = pvc.metadata.controller()
    if pvc.namespace != pod.namespace or ctl is None or ctl.uid != pod.uid:
        return ERR_NOT_OWNER.format(pvc_ns=pvc.namespace, pvc=pvc.name, pod_ns=pod.namespace, pod=pod.name)
    return None


def _selector_terms_match(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """``volume.CheckNodeAffinity``: the PV's required node selector against the node's labels only
    (no name, so matchFields are ignored); a term that does not parse is skipped, as
    ``LazyErrorNodeSelector`` skips it, and the whole fails only when no valid term matches."""
    if selector is None:
        return True
    try:
        return node_selector_matches(selector, "", labels)
    except NodeSelectorError:
        terms = selector.get("nodeSelectorTerms") if isinstance(selector, dict) else None
        for term in terms if isinstance(terms, list) else []:
            try:
                if node_selector_matches({"nodeSelectorTerms": [term]}, "", labels):
                    return True
            except NodeSelectorError:
                continue
        return False


def _pv_node_affinity(pv: PersistentVolume) -> dict[str, Any] | None:
    return pv.spec.node_affinity.required if pv.spec.node_affinity is not None else None


def _label_selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(...).Matches``; a selector that does not convert is unknown
    here (the scheduler fails with an error whose wording this tool does not reproduce)."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        op, values = req.operator, req.values
        if op in ("In", "NotIn") and not values or op in ("Exists", "DoesNotExist") and values or \
                op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise _Unknown(f"PVC selector expression {req.key} {op} {values} does not convert to a label selector")
        present = req.key in labels
        if op == "In" and not (present and labels[req.key] in values):
            return False
        if op == "NotIn" and present and labels[req.key] in values:
            return False
        if op == "Exists" and not present or op == "DoesNotExist" and present:
            return False
    return True


def _storage(resources: dict) -> Fraction:
    q = resources.get("storage")
    return q.as_fraction() if q is not None else Fraction(0)


def _csinode(cycle: Cycle, node: NodeInfo) -> CSINode | None:
    return _checked(cycle.inventory.get(CSINode, None, node.name))


def _migrated_on_node(plugin: str, csinode: CSINode | None) -> bool:
    """volumebinding ``isPluginMigratedToCSIOnNode``: the CSINode's migrated-plugins annotation."""
    if csinode is None or plugin not in MIGRATION_ON:
        return False
    return plugin in csinode.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "").split(",")


def _run(fn, *args) -> Any:
    """Call a plugin step, turning the carried outcomes into statuses."""
    try:
        return fn(*args)
    except _Unknown as exc:
        return Status.unknown(str(exc))
    except _Error as exc:
        return Status.error(str(exc))
    except _Rejected as exc:
        return Status.unschedulable(str(exc), unresolvable=True)


def _pre(fn, cycle: Cycle) -> PreFilterResult:
    result = _run(fn, cycle)
    return PreFilterResult(status=result) if isinstance(result, Status) else result


def _skip() -> PreFilterResult:
    return PreFilterResult(status=Status("Skip"))


# -- VolumeRestrictions -------------------------------------------------------------------------

def _needs_restrictions_check(volume: Volume) -> bool:
    return volume.gce_persistent_disk is not None or volume.aws_elastic_block_store is not None or \
        volume.rbd is not None or volume.iscsi is not None


def _is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """``isVolumeConflict``: the same GCE PD / EBS volume / iSCSI IQN / RBD image on the node."""
    for existing in pod.spec.volumes:
        disk, other = volume.gce_persistent_disk, existing.gce_persistent_disk
        if disk is not None and other is not None and disk.pd_name == other.pd_name and \
                not (disk.read_only and other.read_only):
            return True
        ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
            return True
        iscsi, other_iscsi = volume.iscsi, existing.iscsi
        if iscsi is not None and other_iscsi is not None and iscsi.iqn == other_iscsi.iqn and \
                not (iscsi.read_only and other_iscsi.read_only):
            return True
        rbd, other_rbd = volume.rbd, existing.rbd
        if rbd is not None and other_rbd is not None and set(rbd.monitors) & set(other_rbd.monitors) and \
                rbd.pool == other_rbd.pool and rbd.image == other_rbd.image and \
                not (rbd.read_only and other_rbd.read_only):
            return True
    return False


@dataclass(frozen=True)
class _RestrictionsState:
    rwop_claims: frozenset[str]  # names of the pod's ReadWriteOncePod PVCs
    conflicts: int  # references to them by pods in the snapshot (plus nominated pods added)


def _rwop_refs(state_claims: frozenset[str], namespace: str | None, pod: Pod) -> int:
    """``conflictingPVCRefCountForPod``."""
    if pod.namespace != namespace:
        return 0
    return sum(1 for v in pod.spec.volumes
               if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in state_claims)


class VolumeRestrictions(Plugin):
    NAME = "VolumeRestrictions"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        volumes = pod.spec.volumes
        needs_check = any(_needs_restrictions_check(v) for v in volumes)
        if not needs_check and not any(v.persistent_volume_claim is not None for v in volumes):
            return _skip()
        return _pre(self._pre_filter, cycle)

    def _pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        _check_pod(pod)
        needs_check = any(_needs_restrictions_check(v) for v in pod.spec.volumes)
        claims: set[str] = set()
        pvc_volumes = [v for v in pod.spec.volumes if v.persistent_volume_claim is not None]
        if pvc_volumes:
            _require(cycle, "PersistentVolumeClaim")
        for volume in pvc_volumes:
            name = volume.persistent_volume_claim.claim_name
            pvc = _pvc(cycle, pod.namespace, name)
            if pvc is None:
                raise _Rejected(_not_found(PVC_RESOURCE, name))
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                claims.add(pvc.name)
        # IsPVCUsedByPods: pods on the snapshot's nodes referencing the claim (at most one may)
        used = {v.persistent_volume_claim.claim_name for n in cycle.nodes for p in n.pods
                if p.pod.namespace == pod.namespace for v in p.pod.spec.volumes
                if v.persistent_volume_claim is not None} if claims else set()
        conflicts = sum(1 for c in claims if c in used)
        if not needs_check and conflicts == 0:
            return _skip()
        return PreFilterResult(state=_RestrictionsState(frozenset(claims), conflicts))

    def filter(self, cycle: Cycle, state: _RestrictionsState, node: NodeInfo) -> Status:
        pod = cycle.pod.pod
        for volume in pod.spec.volumes:
            if not _needs_restrictions_check(volume):
                continue
            for existing in node.pods:
                if _is_volume_conflict(volume, existing.pod):
                    return Status.unschedulable(ERR_REASON_DISK_CONFLICT, evidence=[Evidence(
                        ERR_REASON_DISK_CONFLICT,
                        detail=f"volume {volume.name} ({volume.source}) is also used by pod {existing.pod.key}")])
        if state is not None and state.conflicts > 0:
            users = sorted({p.pod.key for n in cycle.nodes for p in n.pods
                            if _rwop_refs(state.rwop_claims, pod.namespace, p.pod)})
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT, evidence=[Evidence(
                ERR_REASON_RWOP_CONFLICT, detail=f"ReadWriteOncePod claim(s) {', '.join(sorted(state.rwop_claims))} "
                f"in use by {', '.join(users) or 'a nominated pod'}")])
        return Status()

    def add_pod(self, cycle: Cycle, state: _RestrictionsState, pod: PodInfo, node: NodeInfo) -> Any:
        if state is None:
            return state
        return _RestrictionsState(state.rwop_claims,
                                  state.conflicts + _rwop_refs(state.rwop_claims, cycle.pod.pod.namespace, pod.pod))


# -- VolumeZone ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _PVTopology:
    pv: str
    key: str
    values: frozenset[str]


def _label_zones(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: "__"-separated, no empty element (else the label is ignored)."""
    zones = [z.strip() for z in value.split("__")]
    return None if any(not z for z in zones) else frozenset(zones)


class VolumeZone(Plugin):
    NAME = "VolumeZone"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        if not any(v.persistent_volume_claim is not None for v in cycle.pod.pod.spec.volumes):
            return _skip()  # getPVbyPod finds no topology: Skip
        return _pre(self._pre_filter, cycle)

    def _pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        _check_pod(pod)
        _require(cycle, "PersistentVolumeClaim")
        topologies: list[_PVTopology] = []
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            name = volume.persistent_volume_claim.claim_name
            if not name:
                raise _Rejected(ERR_ZONE_PVC_NO_NAME)
            pvc = _pvc(cycle, pod.namespace, name)
            if pvc is None:
                raise _Rejected(_not_found(PVC_RESOURCE, name))
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = pvc.storage_class
                if not class_name:
                    raise _Rejected(ERR_ZONE_NO_PV_NO_CLASS)
                _require(cycle, "StorageClass")
                sc = _class(cycle, class_name)
                if sc is None:
                    raise _Rejected(_not_found(SC_RESOURCE, class_name))
                if sc.volume_binding_mode is None:
                    raise _Rejected(ERR_BINDING_MODE_NOT_SET.format(name=class_name))
                if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                raise _Rejected(ERR_ZONE_PV_NO_NAME)
            _require(cycle, "PersistentVolume")
            pv = _pv(cycle, pv_name)
            if pv is None:
                raise _Rejected(_not_found(PV_RESOURCE, pv_name))
            for key in TOPOLOGY_LABELS:
                value = pv.metadata.labels.get(key)
                if value is not None and (zones := _label_zones(value)) is not None:
                    topologies.append(_PVTopology(pv.name, key, zones))
        if not topologies:
            return _skip()
        return PreFilterResult(state=tuple(topologies))

    def filter(self, cycle: Cycle, state: tuple[_PVTopology, ...], node: NodeInfo) -> Status:
        labels = node.node.metadata.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return Status()  # a node without topology labels: single-zone cluster
        for topology in state or ():
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_TO_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return Status.unschedulable(ERR_REASON_VOLUME_ZONE_CONFLICT, unresolvable=True, evidence=[Evidence(
                    ERR_REASON_VOLUME_ZONE_CONFLICT, detail=f"PersistentVolume {topology.pv} has {topology.key} in "
                    f"{sorted(topology.values)}, the node has {value if value is not None else 'no such label'}")])
        return Status()


# -- VolumeBinding ------------------------------------------------------------------------------

@dataclass
class _BindingState:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    pvs_by_class: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def _bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``."""
    ref = pv.spec.claim_ref
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace:
        return False
    return not ref.uid or ref.uid == pvc.uid


def _candidates(pvc: PersistentVolumeClaim, pvs: list[PersistentVolume], labels: dict[str, str],
                excluded: set[str]) -> list[PersistentVolume]:
    """``FindMatchingVolume`` on the scheduler path: the PV pre-bound to the claim (alone), or every
    smallest matching PV (the scheduler takes whichever its cache lists first: several means map
    order decides). Empty: no match."""
    requested = _storage(pvc.spec.resources.requests)
    selector = pvc.spec.selector
    smallest: list[PersistentVolume] = []
    smallest_size: Fraction | None = None
    for pv in pvs:
        if pv.name in excluded:
            continue
        if pv.spec.claim_ref is not None and not _bound_to_claim(pv, pvc):
            continue
        size = _storage(pv.spec.capacity)
        if size < requested:
            continue
        if (pvc.spec.volume_mode or "Filesystem") != (pv.spec.volume_mode or "Filesystem"):
            continue
        if (pvc.spec.volume_attributes_class_name or "") != (pv.spec.volume_attributes_class_name or ""):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        affinity_ok = _selector_terms_match(_pv_node_affinity(pv), labels)
        if _bound_to_claim(pv, pvc):
            return [pv] if affinity_ok else []
        if pv.status.phase != "Available":
            continue
        if selector is not None and not _label_selector_matches(selector, pv.metadata.labels):
            continue
        if pv.storage_class != pvc.storage_class or not affinity_ok:
            continue
        if not set(pvc.spec.access_modes) <= set(pv.spec.access_modes):
            continue
        if smallest_size is None or size < smallest_size:
            smallest, smallest_size = [pv], size
        elif size == smallest_size:
            smallest.append(pv)
    return smallest


MAX_BRANCHES = 64


class VolumeBinding(Plugin):
    NAME = "VolumeBinding"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        if not any(v.persistent_volume_claim is not None or v.ephemeral is not None
                   for v in cycle.pod.pod.spec.volumes):
            return _skip()  # podHasPVCs: false
        return _pre(self._pre_filter, cycle)

    def _pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        _check_pod(pod)
        _require(cycle, "PersistentVolumeClaim")
        claims: list[PersistentVolumeClaim] = []
        for volume in pod.spec.volumes:  # podHasPVCs
            named = _claim_name(pod, volume)
            if named is None:
                continue
            name, ephemeral = named
            pvc = _pvc(cycle, pod.namespace, name)
            if pvc is None:
                raise _Rejected(ERR_WAITING_EPHEMERAL.format(name=name) if ephemeral
                                else _not_found(PVC_RESOURCE, name))
            if pvc.status.phase == "Lost":
                raise _Rejected(ERR_CLAIM_LOST.format(name=pvc.name, volume=pvc.spec.volume_name))
            if pvc.metadata.deletion_timestamp is not None:
                raise _Rejected(ERR_CLAIM_DELETING.format(name=pvc.name))
            if ephemeral and (why := _not_owner(pod, pvc)):
                raise _Rejected(why)
            claims.append(pvc)
        state = _BindingState()
        immediate = []
        for pvc in claims:  # GetPodVolumeClaims
            if pvc.spec.volume_name and ANN_BIND_COMPLETED in pvc.metadata.annotations:
                state.bound.append(pvc)
                continue
            delay = False
            if class_name := pvc.storage_class:  # IsDelayBindingMode
                _require(cycle, "StorageClass")
                sc = _class(cycle, class_name)
                if sc is not None:
                    if sc.volume_binding_mode is None:
                        raise _Error(ERR_BINDING_MODE_NOT_SET.format(name=class_name))
                    delay = sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
            (state.delayed if delay and not pvc.spec.volume_name else immediate).append(pvc)
        if immediate:
            return PreFilterResult(status=Status.unschedulable(ERR_UNBOUND_IMMEDIATE, unresolvable=True, evidence=[
                Evidence(ERR_UNBOUND_IMMEDIATE, detail=f"unbound: {', '.join(p.key for p in immediate)}")]))
        if state.bound or state.delayed:
            _require(cycle, "PersistentVolume")
        if state.delayed:
            all_pvs = cycle.inventory.all(PersistentVolume)
            for pvc in state.delayed:
                cls = pvc.storage_class
                if cls not in state.pvs_by_class:
                    state.pvs_by_class[cls] = [_checked(pv) for pv in all_pvs if pv.storage_class == cls]
        return PreFilterResult(state=state)

    def filter(self, cycle: Cycle, state: _BindingState, node: NodeInfo) -> Status:
        return _run(self._filter, cycle, state, node)

    def _filter(self, cycle: Cycle, state: _BindingState, node: NodeInfo) -> Status:
        """``FindPodVolumes``: the reasons in its order (bound, unbound, space, missing PV)."""
        labels = node.node.metadata.labels
        bound_ok, pv_found, unbound_ok = True, True, True
        evidence: list[Evidence] = []
        csinode_read = False
        for pvc in state.bound:  # checkBoundClaims
            pv = _pv(cycle, pvc.spec.volume_name)
            if pv is None:
                pv_found = False
                evidence.append(Evidence(ERR_REASON_PV_NOT_EXIST, detail=f"PersistentVolumeClaim {pvc.key} is bound "
                                         f"to PersistentVolume {pvc.spec.volume_name}, which does not exist"))
                break
            if pv.spec.in_tree in MIGRATION_ON:  # tryTranslatePVToCSI
                if not csinode_read:
                    _require(cycle, "CSINode")
                    csinode_read = True
                if _migrated_on_node(pv.spec.in_tree, _csinode(cycle, node)):
                    raise _Unknown(f"PersistentVolume {pv.name} ({pv.spec.in_tree}) is translated to CSI on this "
                                   "node before its node affinity is checked; that translation is not modelled")
            if not _selector_terms_match(_pv_node_affinity(pv), labels):
                bound_ok = False
                evidence.append(Evidence(ERR_REASON_NODE_CONFLICT, detail=f"PersistentVolume {pv.name} (claim "
                                         f"{pvc.key}) node affinity {_pv_node_affinity(pv)}"))
                break

        def reasons() -> Status:
            found = [r for r, bad in ((ERR_REASON_NODE_CONFLICT, not bound_ok), (ERR_REASON_BIND_CONFLICT, not unbound_ok),
                                      (ERR_REASON_PV_NOT_EXIST, not pv_found)) if bad]
            if not found:
                return Status()
            return Status.unschedulable(*found, unresolvable=True, evidence=evidence)

        if not state.delayed:
            return reasons()
        to_match, to_provision = [], []
        for pvc in state.delayed:
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    unbound_ok = False
                    evidence.append(Evidence(ERR_REASON_BIND_CONFLICT, detail=f"PersistentVolumeClaim {pvc.key} is "
                                             f"being provisioned for node {selected}"))
                    return reasons()
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        # sort.Sort(byPVCSize): insertion sort (stable) up to 12 claims; beyond, ties are unordered
        to_match.sort(key=lambda p: _storage(p.spec.resources.requests))
        sizes = [_storage(p.spec.resources.requests) for p in to_match]
        if len(to_match) > 12 and len(set(sizes)) < len(sizes):
            raise _Unknown("more than 12 unbound claims with equal sizes: the scheduler's sort order decides")
        outcomes: dict[bool, str | None] = {}
        self._match(cycle, to_match, 0, set(), [], to_provision, state, node, outcomes, [0])
        if len(outcomes) > 1:
            raise _Unknown("which of several equally small PersistentVolumes the scheduler picks (its cache's map "
                           "order) decides whether the other claims find a volume")
        ok, detail = outcomes.popitem()
        if not ok:
            unbound_ok = False
            evidence.append(Evidence(ERR_REASON_BIND_CONFLICT, detail=detail))
        return reasons()

    def _match(self, cycle, claims, index, excluded, unmatched, to_provision, state, node, outcomes, branches) -> None:
        """findMatchingVolumes then checkVolumeProvisions, over every tie the scheduler could break."""
        branches[0] += 1
        if branches[0] > MAX_BRANCHES:
            raise _Unknown("too many equally small PersistentVolumes to follow the scheduler's choice")
        if index == len(claims):
            ok, detail = self._provision(cycle, to_provision + unmatched, node)
            outcomes.setdefault(ok, detail)
            return
        pvc = claims[index]
        found = _candidates(pvc, state.pvs_by_class.get(pvc.storage_class, []), node.node.metadata.labels, excluded)
        if not found:
            self._match(cycle, claims, index + 1, excluded, unmatched + [pvc], to_provision, state, node, outcomes,
                        branches)
        for pv in found:
            self._match(cycle, claims, index + 1, excluded | {pv.name}, unmatched, to_provision, state, node,
                        outcomes, branches)

    def _provision(self, cycle: Cycle, claims: list[PersistentVolumeClaim], node: NodeInfo) -> tuple[bool, str | None]:
        """``checkVolumeProvisions``: (satisfied, why not)."""
        for pvc in claims:
            class_name = pvc.storage_class
            if not class_name:
                raise _Error(ERR_NO_CLASS.format(key=pvc.key))
            sc = _class(cycle, class_name)
            if sc is None:
                raise _Error(ERR_CLASS_NOT_FOUND.format(name=class_name))
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, f"no PersistentVolume matches claim {pvc.key} and StorageClass {sc.name} cannot provision"
            if not _topology_matches(sc, node.node.metadata.labels):
                return False, (f"no PersistentVolume matches claim {pvc.key} and StorageClass {sc.name}'s "
                               "allowedTopologies exclude the node")
            if "storage" in pvc.spec.resources.requests:  # hasEnoughCapacity
                _require(cycle, "CSIDriver")
                driver = _checked(cycle.inventory.get(CSIDriver, None, sc.provisioner))
                if driver is not None and driver.spec.storage_capacity:
                    raise _Unknown(f"CSIDriver {driver.name} checks storage capacity (CSIStorageCapacity), which "
                                   "this tool does not read")
        return True, None


def _topology_matches(sc: StorageClass, labels: dict[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms match all; an empty or invalid term nothing."""
    if not sc.allowed_topologies:
        return True
    for term in sc.allowed_topologies:
        exprs = term.match_label_expressions
        if not exprs or any(not e.values for e in exprs):
            continue
        if all(e.key in labels and labels[e.key] in e.values for e in exprs):
            return True
    return False


# -- NodeVolumeLimits (CSI) ---------------------------------------------------------------------

RANDOM_HANDLE = "\0random-prefix-"  # randomVolumeIDPrefix: unique per plugin instance, never a real handle


class NodeVolumeLimits(Plugin):
    NAME = "NodeVolumeLimits"

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        for v in cycle.pod.pod.spec.volumes:
            if v.persistent_volume_claim is not None or v.ephemeral is not None or v.source in INLINE_MIGRATABLE:
                return PreFilterResult()
        return _skip()

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        return _run(self._filter, cycle, node)

    def _filter(self, cycle: Cycle, node: NodeInfo) -> Status:
        pod = cycle.pod.pod
        if not pod.spec.volumes:
            return Status()
        _check_pod(pod)
        _require(cycle, "CSINode", "PersistentVolumeClaim")
        csinode = _csinode(cycle, node)
        new: dict[str, str] = {}
        self._attachable(cycle, pod, csinode, True, new, [])
        if not new:
            return Status()
        missing = sorted({d for d in new.values() if not self._driver_installed(cycle, d, csinode)}) \
            if not older(SCHEDULER, "VolumeLimitScaling", cycle.release) else []
        if missing:
            message = ERR_DRIVER_NOT_INSTALLED.format(driver=missing[0])
            detail = f"CSIDriver {missing[0]} sets preventPodSchedulingIfMissing and the node's CSINode lacks it"
            if len(missing) > 1:
                detail += (f"; so do {', '.join(missing[1:])} (the scheduler names whichever its map order gives "
                           "first)")
            return Status.unschedulable(message, evidence=[Evidence(message, detail=detail)])
        limits = {d.name: d.allocatable.count for d in (csinode.spec.drivers if csinode else [])
                  if d.allocatable is not None and d.allocatable.count is not None}
        if not limits:
            return Status()
        attached: dict[str, str] = {}
        undecided: list[str] = []
        for existing in node.pods:
            self._attachable(cycle, existing.pod, csinode, False, attached, undecided)
        counts: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)
            counts[driver] = counts.get(driver, 0) + 1
        limited = {d for d in new.values() if d in limits}
        if limited and undecided:
            raise _Unknown(undecided[0])
        if limited:
            _require(cycle, "VolumeAttachment", "PersistentVolume")
            for va in cycle.inventory.all(VolumeAttachment):
                spec = va.spec
                if spec.node_name != node.name or not spec.attacher or spec.source.persistent_volume_name is None:
                    continue
                pv = cycle.inventory.get(PersistentVolume, None, spec.source.persistent_volume_name)
                if pv is None or pv.spec.csi is None:
                    continue
                if f"{spec.attacher}/{pv.spec.csi.volume_handle}" not in attached:
                    counts[spec.attacher] = counts.get(spec.attacher, 0) + 1
        adding: dict[str, int] = {}
        for driver in new.values():
            adding[driver] = adding.get(driver, 0) + 1
        for driver, count in sorted(adding.items()):
            limit = limits.get(driver)
            if limit is not None and counts.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT, evidence=[Evidence(
                    ERR_REASON_MAX_VOLUME_COUNT, resource=driver, requested=str(count), allocatable=str(limit),
                    used=str(counts.get(driver, 0)), detail="volumes of this CSI driver: the pod's new ones, the "
                    "node's CSINode allocatable count, those attached (pods on the node and VolumeAttachments)")])
        return Status()

    def _driver_installed(self, cycle: Cycle, driver: str, csinode: CSINode | None) -> bool:
        """``checkCSIDriverOnNode``."""
        _require(cycle, "CSIDriver")
        csidriver = _checked(cycle.inventory.get(CSIDriver, None, driver))
        if csidriver is None or not csidriver.spec.prevent_pod_scheduling_if_missing:
            return True
        return csinode is not None and any(d.name == driver for d in csinode.spec.drivers)

    def _attachable(self, cycle: Cycle, pod: Pod, csinode: CSINode | None, new_pod: bool, result: dict[str, str],
                    undecided: list[str]) -> None:
        """``filterAttachableVolumes``: unique volume name -> CSI driver. For pods already on the node,
        what cannot be decided is collected in ``undecided`` (it matters only for a limited driver)."""
        for volume in pod.spec.volumes:
            named = _claim_name(pod, volume)
            try:
                if named is None:
                    if volume.source in INLINE_MIGRATABLE and csinode is not None and \
                            IN_TREE_SOURCES[volume.source] in MIGRATION_ON:
                        raise _Unknown(f"pod {pod.key} volume {volume.name} ({volume.source}) is counted as its CSI "
                                       "translation, which is not modelled")
                    continue
                name, ephemeral = named
                if not name:
                    raise _Error(ERR_LIMITS_PVC_NO_NAME)
                pvc = _pvc(cycle, pod.namespace, name)
                if pvc is None:
                    if new_pod:
                        raise _Rejected(ERR_LIMITS_LOOKUP.format(ns=pod.namespace, name=name,
                                                                 err=_not_found(PVC_RESOURCE, name)))
                    continue
                if ephemeral and (why := _not_owner(pod, pvc)):
                    raise _Error(why)
                driver, handle = self._driver_info(cycle, csinode, pvc)
            except _Unknown as exc:
                if new_pod:
                    raise
                undecided.append(str(exc))
                continue
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _driver_info(self, cycle: Cycle, csinode: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfo``."""
        if not pvc.spec.volume_name:
            return self._driver_info_from_class(cycle, csinode, pvc)
        _require(cycle, "PersistentVolume")
        pv = _pv(cycle, pvc.spec.volume_name)
        if pv is None:
            return self._driver_info_from_class(cycle, csinode, pvc)
        if pv.spec.csi is not None:
            return pv.spec.csi.driver, pv.spec.csi.volume_handle
        if not pv.spec.in_tree or csinode is None or pv.spec.in_tree not in MIGRATION_ON:
            return "", ""
        raise _Unknown(f"PersistentVolume {pv.name} ({pv.spec.in_tree}) is counted as its CSI translation, which is "
                       "not modelled")

    def _driver_info_from_class(self, cycle: Cycle, csinode: CSINode | None,
                                pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: an unbound claim counts once, under its class's provisioner."""
        class_name = pvc.storage_class
        if not class_name:
            return "", ""
        _require(cycle, "StorageClass")
        sc = _class(cycle, class_name)
        if sc is None:
            return "", ""
        handle = f"{RANDOM_HANDLE}{pvc.namespace}/{pvc.name}"
        if sc.provisioner in CSI_DRIVER_OF:  # IsMigratableIntreePluginByName
            if csinode is None or sc.provisioner not in MIGRATION_ON:
                return "", ""
            return CSI_DRIVER_OF[sc.provisioner], handle
        return sc.provisioner, handle


PLUGINS: tuple[type[Plugin], ...] = (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone)


def plugins() -> Iterable[Plugin]:
    return [cls() for cls in PLUGINS]
