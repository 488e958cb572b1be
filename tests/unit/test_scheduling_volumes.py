"""The volume filters against kube-scheduler v1.37.2's own tables.

Sources (k8s.io/kubernetes@v1.37.2, pkg/scheduler/framework/plugins), cases named as upstream:

* volumerestrictions/volume_restrictions_test.go: TestGCEDiskConflicts, TestAWSDiskConflicts,
  TestRBDDiskConflicts, TestISCSIDiskConflicts (every case), TestAccessModeConflicts (every case).
* volumezone/volume_zone_test.go: TestSingleZone, TestMultiZone (every case), TestWithBinding.
* nodevolumelimits/csi_test.go: TestCSILimits (the CSI, pending, missing-SC, per-driver,
  VolumeAttachment, ephemeral and no-limit cases; the in-tree translation cases are asserted
  *unknown* here: their CSI handle is not modelled) and TestCSILimitsWithDriverInstalledCheck
  (gate enabled, its 1.37 default). The upstream fake lister names its resource
  ``persistentvolumeclaims``; the scheduler's client-go lister says ``persistentvolumeclaim``,
  which is what a real scheduler writes and what is asserted.
* volumebinding/volume_binding_test.go: TestVolumeBinding's filter cases; binder_test.go:
  TestFindPodVolumesWithoutProvisioning / WithProvisioning (static matches, selected node,
  allowedTopologies, storage capacity).
"""

from __future__ import annotations

import pytest

from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.storage import (CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass,
                                       VolumeAttachment)
from kubectl_dra.scheduling import volumes as vol
from kubectl_dra.scheduling.framework import ERROR, SKIP, UNRESOLVABLE, UNSCHEDULABLE, Cycle, NodeInfo, PodInfo

ALL_KINDS = {"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment"}
U, S = UNRESOLVABLE, UNSCHEDULABLE
ZONE_B, REGION_B = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


# -- builders -----------------------------------------------------------------------------------

def pod(*volumes: dict, name: str = "pod", ns: str = "default", uid: str = "", node: str | None = None) -> Pod:
    spec: dict = {"containers": [{"name": "c"}], "volumes": [{"name": f"v{i}", **v} if "name" not in v else v
                                                            for i, v in enumerate(volumes)]}
    if node:
        spec["nodeName"] = node
    return Pod.model_validate({"metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": spec})


def pvc_vol(name: str) -> dict:
    return {"persistentVolumeClaim": {"claimName": name}}


def node(name: str = "node-a", labels: dict | None = None) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": labels or {}}})


def pvc(name: str, sc: str | None = None, volume: str = "", ns: str = "default", bound: bool = False,
        modes=(), storage: str | None = None, annotations: dict | None = None, **extra) -> PersistentVolumeClaim:
    spec: dict = {"volumeName": volume, "accessModes": list(modes)}
    if sc is not None:
        spec["storageClassName"] = sc
    if storage:
        spec["resources"] = {"requests": {"storage": storage}}
    meta: dict = {"name": name, "namespace": ns, "annotations": dict(annotations or {})}
    if bound:
        meta["annotations"][vol.ANN_BIND_COMPLETED] = "true"
    meta.update(extra.pop("meta", {}))
    return PersistentVolumeClaim.model_validate({"metadata": meta, "spec": spec, "status": extra.pop("status", {})})


def pv(name: str, sc: str = "", labels: dict | None = None, affinity: dict | None = None, phase: str = "",
       capacity: str | None = None, modes=(), claim: tuple | None = None, source: dict | None = None) -> PersistentVolume:
    spec: dict = {"storageClassName": sc, "accessModes": list(modes)}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": v} for k, v in affinity.items()]}]}}
    if capacity:
        spec["capacity"] = {"storage": capacity}
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    spec.update(source or {})
    return PersistentVolume.model_validate({"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
                                            "status": {"phase": phase}})


def sc(name: str, mode: str | None = "WaitForFirstConsumer", provisioner: str = "", topologies=None) -> StorageClass:
    raw: dict = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode:
        raw["volumeBindingMode"] = mode
    if topologies is not None:
        raw["allowedTopologies"] = topologies
    return StorageClass.model_validate(raw)


def inventory(*objects, kinds=ALL_KINDS) -> Inventory:
    inv = Inventory()
    inv.extend(objects)
    inv.read_kinds = set(kinds) | {"Pod", "Node"}
    return inv


def cycle(p: Pod, nodes: list[NodeInfo], inv: Inventory) -> Cycle:
    return Cycle(pod=PodInfo(p), nodes=nodes, inventory=inv)


def node_info(n: Node | None = None, pods=()) -> NodeInfo:
    return NodeInfo(n or node(), [PodInfo(p) for p in pods])


def run(plugin, p: Pod, inv: Inventory, ni: NodeInfo | None = None, others=()):
    """PreFilter then (unless it rejected or skipped) Filter on ``ni``: (prefilter, filter) statuses."""
    ni = ni or node_info()
    c = cycle(p, [ni, *others], inv)
    pre = plugin.pre_filter(c)
    if pre.status.code != "Success" or pre.status.undetermined:
        return pre.status, None
    return pre.status, plugin.filter(c, pre.state, ni)


def outcome(status) -> tuple | None:
    """(code, message) of a rejection or error, "unknown" for undetermined, None for success."""
    if status is None or status.success:
        return None
    if status.undetermined:
        return ("unknown",)
    return (status.code, status.message)


# -- the cost of a pod without these volumes -------------------------------------------------------

class _NoLookups(Inventory):
    def __getattribute__(self, name):
        if name in ("get", "all", "of_kind", "read_kinds", "index"):
            raise AssertionError(f"a pod without PVC or disk volumes made a plugin call inventory.{name}")
        return super().__getattribute__(name)


@pytest.mark.parametrize("plugin", [vol.VolumeRestrictions, vol.NodeVolumeLimits, vol.VolumeBinding, vol.VolumeZone])
def test_configmap_secret_emptydir_pod_is_skipped_without_lookups(plugin):
    p = pod({"configMap": {"name": "c"}}, {"secret": {"secretName": "s"}}, {"emptyDir": {}}, {"projected": {}},
            {"csi": {"driver": "inline.example.com"}})
    result = plugin().pre_filter(cycle(p, [node_info()], _NoLookups()))
    assert result.status.code == SKIP and result.status.undetermined is None


def test_plugin_names_are_upstreams():
    assert [p.NAME for p in vol.PLUGINS] == ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]


# -- VolumeRestrictions ---------------------------------------------------------------------------

GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}
DISK = (S, vol.ERR_REASON_DISK_CONFLICT)


@pytest.mark.parametrize("same,other", [(GCE, GCE2), (AWS, AWS2), (RBD, RBD2), (ISCSI, ISCSI2)],
                         ids=["GCE", "AWS", "RBD", "ISCSI"])
@pytest.mark.parametrize("case,new,existing,want_skip,want", [
    ("nothing", (), None, True, None),
    ("one state", (), "same", True, None),
    ("same state", ("same",), "same", False, DISK),
    ("different state", ("other",), "same", False, None),
])
def test_disk_conflicts(same, other, case, new, existing, want_skip, want):
    pick = {"same": same, "other": other}
    p = pod(*[pick[v] for v in new])
    pods = [pod(pick[existing], name="existing")] if existing else []
    pre, got = run(vol.VolumeRestrictions(), p, inventory(), node_info(pods=pods))
    assert (pre.code == SKIP) == want_skip
    assert outcome(got) == want


def test_gce_read_only_everywhere_shares_the_disk():
    ro = {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
    assert outcome(run(vol.VolumeRestrictions(), pod(ro), inventory(), node_info(pods=[pod(ro)]))[1]) is None
    assert outcome(run(vol.VolumeRestrictions(), pod(ro), inventory(), node_info(pods=[pod(GCE)]))[1]) == DISK


def test_volume_without_restriction_is_skipped():
    pre, _ = run(vol.VolumeRestrictions(), pod({"name": "volume with no restriction"}), inventory())
    assert pre.code == SKIP


RWOP1 = pvc("claim-with-rwop-1", modes=["ReadWriteOncePod"])
RWOP2 = pvc("claim-with-rwop-2", modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", modes=["ReadWriteMany"])
RWOP = (S, vol.ERR_REASON_RWOP_CONFLICT)


@pytest.mark.parametrize("case,claims,existing,pvcs,want_pre,want", [
    ("nothing", (), [], [], (SKIP, ""), None),
    ("failed to get PVC", ("claim-with-rwop-1",), [], [], (U, 'persistentvolumeclaim "claim-with-rwop-1" not found'),
     None),
    ("no access mode conflict", ("claim-with-rwop-1",), [("claim-with-rwx",)], [RWOP1, RWX], (SKIP, ""), None),
    ("access mode conflict, unschedulable", ("claim-with-rwop-1",), [("claim-with-rwop-1",), ("claim-with-rwx",)],
     [RWOP1, RWX], None, RWOP),
    ("two conflicts, unschedulable", ("claim-with-rwop-1", "claim-with-rwop-2"),
     [("claim-with-rwop-1", "claim-with-rwop-2"), ("claim-with-rwx",)], [RWOP1, RWOP2, RWX], None, RWOP),
])
def test_access_mode_conflicts(case, claims, existing, pvcs, want_pre, want):
    p = pod(*[pvc_vol(c) for c in claims])
    pods = [pod(*[pvc_vol(c) for c in cs], name=f"e{i}", node="node-a") for i, cs in enumerate(existing)]
    pre, got = run(vol.VolumeRestrictions(), p, inventory(*pvcs), node_info(pods=pods))
    assert (None if pre.code == "Success" else (pre.code, pre.message)) == want_pre
    assert outcome(got) == want


def test_rwop_claim_used_on_another_node_rejects_every_node_and_nominated_pods_count():
    user = pod(pvc_vol("claim-with-rwop-1"), name="user", node="node-b")
    other = node_info(node("node-b"), [user])
    _, got = run(vol.VolumeRestrictions(), pod(pvc_vol("claim-with-rwop-1")), inventory(RWOP1), node_info(),
                 others=[other])
    assert outcome(got) == RWOP
    # nobody uses it yet, a nominated pod does: AddPod counts it
    plugin, p = vol.VolumeRestrictions(), pod(pvc_vol("claim-with-rwop-1"), AWS)
    ni = node_info()
    c = cycle(p, [ni], inventory(RWOP1))
    pre = plugin.pre_filter(c)
    assert plugin.filter(c, pre.state, ni).success
    added = plugin.add_pod(c, pre.state, PodInfo(pod(pvc_vol("claim-with-rwop-1"), name="nominated")), ni)
    assert outcome(plugin.filter(c, added, ni)) == RWOP
    assert plugin.filter(c, pre.state, ni).success  # the original state is untouched


def test_restrictions_unknown_when_pvcs_not_read():
    pre, _ = run(vol.VolumeRestrictions(), pod(pvc_vol("x")), inventory(kinds=set()))
    assert pre.undetermined and "PersistentVolumeClaim" in pre.undetermined


# -- VolumeZone -----------------------------------------------------------------------------------

ZONE_PVS = [pv("Vol_1", labels={ZONE_B: "us-west1-a"}), pv("Vol_2", labels={REGION_B: "us-west1", "uselessLabel": "none"}),
            pv("Vol_3", labels={REGION_B: "us-west1"}), pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
            pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
            pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"})]
ZONE_PVCS = [pvc("PVC_1", volume="Vol_1"), pvc("PVC_2", volume="Vol_2"), pvc("PVC_3", volume="Vol_3"),
             pvc("PVC_4", volume="Vol_not_exist"), pvc("PVC_Stable_1", volume="Vol_Stable_1"),
             pvc("PVC_Stable_2", volume="Vol_Stable_2"), pvc("PVC_Stable_3", volume="Vol_Stable_3")]
ZC = (U, vol.ERR_REASON_VOLUME_ZONE_CONFLICT)


@pytest.mark.parametrize("case,claim,labels,want", [
    ("node without labels", "PVC_1", {}, None),
    ("beta zone label matched", "PVC_1", {ZONE_B: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta region label matched", "PVC_2", {REGION_B: "us-west1", "uselessLabel": "none"}, None),
    ("beta region label doesn't match", "PVC_2", {REGION_B: "no_us-west1", "uselessLabel": "none"}, ZC),
    ("beta zone label doesn't match", "PVC_1", {ZONE_B: "no_us-west1-a", "uselessLabel": "none"}, ZC),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, None),
    ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, ZC),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, ZC),
    ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, ZC),
    ("pv with zone,node with beta zone", "PVC_Stable_1", {ZONE_B: "us-west1-a"}, ZC),
    ("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None),
    ("pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, ZC),
])
def test_single_zone(case, claim, labels, want):
    pre, got = run(vol.VolumeZone(), pod(pvc_vol(claim)), inventory(*ZONE_PVS, *ZONE_PVCS),
                   node_info(node("host1", labels)))
    assert pre.code == "Success"
    assert outcome(got) == want


MULTI_PVS = [pv("Vol_1", labels={ZONE_B: "us-west1-a"}), pv("Vol_2", labels={ZONE_B: "us-west1-b", "uselessLabel": "none"}),
             pv("Vol_3", labels={ZONE_B: "us-west1-c__us-west1-a"}), pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
             pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"})]
MULTI_PVCS = [pvc("PVC_1", volume="Vol_1"), pvc("PVC_2", volume="Vol_2"), pvc("PVC_3", volume="Vol_3"),
              pvc("PVC_4", volume="Vol_not_exist"), pvc("PVC_Stable_1", volume="Vol_Stable_1"),
              pvc("PVC_Stable_2", volume="Vol_Stable_2")]


@pytest.mark.parametrize("case,claim,labels,want_pre,want", [
    ("node without labels", "PVC_Stable_1", {}, None, None),
    ("beta zone label matched", "PVC_1", {ZONE_B: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta zone label doesn't match", "PVC_1", {ZONE_B: "us-west1-b", "uselessLabel": "none"}, None, ZC),
    ("beta zone label matched (multi-zone PV)", "PVC_3", {ZONE_B: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta zone label doesn't match (multi-zone PV)", "PVC_3", {ZONE_B: "us-west1-b"}, None, ZC),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, None, ZC),
    ("zone label matched (multi-zone PV)", "PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("zone label doesn't match (multi-zone PV)", "PVC_Stable_2", {ZONE: "us-west1-b"}, None, ZC),
    ("pv not found", "PVC_4", {ZONE_B: "us-west1-a"}, (U, 'persistentvolume "Vol_not_exist" not found'), None),
])
def test_multi_zone(case, claim, labels, want_pre, want):
    pre, got = run(vol.VolumeZone(), pod(pvc_vol(claim)), inventory(*MULTI_PVS, *MULTI_PVCS),
                   node_info(node("host1", labels)))
    assert (None if pre.code == "Success" else (pre.code, pre.message)) == want_pre
    assert outcome(got) == want


@pytest.mark.parametrize("case,claim,want_pre", [  # TestWithBinding
    ("label zone failure domain matched", "PVC_1", None),
    ("unbound volume empty storage class", "PVC_EmptySC", (U, "PersistentVolumeClaim had no pv name and storageClass name")),
    ("unbound volume no storage class", "PVC_NoSC", (U, 'storageclass.storage.k8s.io "Class_0" not found')),
    ("unbound volume immediate binding mode", "PVC_ImmediateSC", (U, "PersistentVolume had no name")),
    ("unbound volume wait binding mode", "PVC_WaitSC", (SKIP, "")),
    ("pvc not found", "PVC_missing", (U, 'persistentvolumeclaim "PVC_missing" not found')),
])
def test_zone_with_binding(case, claim, want_pre):
    objs = [pv("Vol_1", labels={ZONE_B: "us-west1-a"}), pvc("PVC_1", volume="Vol_1"), pvc("PVC_EmptySC", sc=""),
            pvc("PVC_NoSC", sc="Class_0"), pvc("PVC_ImmediateSC", sc="Class_Immediate"), pvc("PVC_WaitSC", sc="Class_Wait"),
            sc("Class_Immediate", "Immediate"), sc("Class_Wait")]
    pre, got = run(vol.VolumeZone(), pod(pvc_vol(claim)), inventory(*objs), node_info(node("host1", {ZONE_B: "us-west1-a"})))
    assert (None if pre.code == "Success" else (pre.code, pre.message)) == want_pre
    assert outcome(got) is None


def test_zone_unknown_when_pvs_not_read():
    pre, _ = run(vol.VolumeZone(), pod(pvc_vol("PVC_1")), inventory(pvc("PVC_1", volume="Vol_1"),
                                                                   kinds={"PersistentVolumeClaim"}))
    assert pre.undetermined and "PersistentVolume" in pre.undetermined


# -- NodeVolumeLimits -----------------------------------------------------------------------------

EBS, GCE_CSI = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
NODE = "node-for-max-pd-test-1"


def csi_objects(drivers, limit_source: str, max_vols: int = 0, va_count: int = 0, sc_provisioner: str | None = None):
    """getFakeCSIPVLister / getFakeCSIPVCLister / getFakeCSIStorageClassLister / buildFakeClientWithVALister /
    getNodeWithPodAndVolumeLimits of csi_test.go (filterName "csi", storage class "csi-sc")."""
    objs: list = []
    for d in drivers:
        for j in range(4):
            name = f"csi-{d}-{j}"
            objs.append(pv(name, source={"csi": {"driver": d, "volumeHandle": name}}))
            objs.append(pvc(name, volume=name))
        for j in range(va_count):
            objs.append(VolumeAttachment.model_validate({"metadata": {"name": f"va-{d}-{j}"}, "spec": {
                "nodeName": NODE, "attacher": d, "source": {"persistentVolumeName": f"csi-{d}-{j}"}}}))
    objs += [pvc("csi-4", sc="csi-sc"), pvc("csi-5"), pvc("csi-6", sc="csi-sc", volume="missing-in-action")]
    objs.append(sc("csi-sc", None, provisioner=sc_provisioner or drivers[0]))
    if limit_source in ("csinode", "csinode-with-no-limit"):
        objs.append(CSINode.model_validate({"metadata": {"name": NODE}, "spec": {"drivers": [
            {"name": d, "nodeID": NODE, **({"allocatable": {"count": max_vols}} if limit_source == "csinode" else {})}
            for d in drivers]}}))
    return objs


def csi_pod(*claims, name="p", **kw) -> Pod:
    return pod(*[pvc_vol(c) for c in claims], name=name, **kw)


RUNNING = csi_pod(f"csi-{EBS}-3", name="running")
PENDING = csi_pod("csi-4", name="pending")
UNBOUND2 = csi_pod("csi-4", name="unbound2")
MISSING_PV = csi_pod("csi-6", name="missing-pv")
NO_SC = csi_pod("csi-5", name="no-sc")
GCE_TWO = csi_pod(f"csi-{GCE_CSI}-1", f"csi-{GCE_CSI}-2", name="gce-two")
EBS_ONE = csi_pod(f"csi-{EBS}-0", name="ebs-one")
EBS_TWO = csi_pod(f"csi-{EBS}-1", f"csi-{EBS}-2", name="ebs-two")
MAX = (S, vol.ERR_REASON_MAX_VOLUME_COUNT)


@pytest.mark.parametrize("case,new,existing,max_vols,drivers,va,source,want", [
    ("should count VolumeAttachments towards volume limit when no pods exist", EBS_ONE, [], 2, [EBS], 2, "csinode", MAX),
    ("should schedule pod when VolumeAttachments count does not exceed limit", EBS_ONE, [], 2, [EBS], 1, "csinode", None),
    ("fits when node volume limit >= new pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], 4, [EBS], 0, "csinode", None),
    ("doesn't when node volume limit <= pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], 0, "csinode", MAX),
    ("should when driver does not support volume limits", EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], 0,
     "csinode-with-no-limit", None),
    ("count pending PVCs towards volume limit <= pods CSI volume", EBS_ONE, [PENDING, EBS_TWO], 2, [EBS], 0, "csinode",
     MAX),
    ("count multiple pending pvcs towards volume limit >= pods CSI volume", EBS_ONE, [PENDING, UNBOUND2, EBS_TWO], 4,
     [EBS], 0, "csinode", None),
    ("should count PVCs with invalid PV name but valid SC", EBS_ONE, [MISSING_PV, EBS_TWO], 2, [EBS], 0, "csinode", MAX),
    ("don't count pvcs with missing SC towards volume limit", EBS_ONE, [RUNNING, NO_SC], 2, [EBS], 0, "csinode", None),
    ("count pvcs with the same type towards volume limit", EBS_ONE, [GCE_TWO, EBS_TWO], 2, [EBS, GCE_CSI], 0, "csinode",
     MAX),
    ("don't count pvcs with different type towards volume limit", GCE_TWO, [EBS_TWO, RUNNING], 2, [EBS, GCE_CSI], 0,
     "csinode", None),
    ("nil csi node", EBS_ONE, [EBS_TWO], 2, [EBS], 0, "", None),
])
def test_csi_limits(case, new, existing, max_vols, drivers, va, source, want):
    inv = inventory(*csi_objects(drivers, source, max_vols, va))
    pre, got = run(vol.NodeVolumeLimits(), new, inv, node_info(node(NODE), existing))
    assert pre.code == "Success"
    assert outcome(got) == want


def test_csi_limits_evidence_has_the_numbers():
    inv = inventory(*csi_objects([EBS], "csinode", 2))
    _, got = run(vol.NodeVolumeLimits(), EBS_ONE, inv, node_info(node(NODE), [RUNNING, EBS_TWO]))
    ev = got.evidence[0]
    assert (ev.resource, ev.requested, ev.allocatable, ev.used) == (EBS, "1", "2", "3")


def ephemeral_pod(uid="12345", *names):
    return pod(*[{"name": n, "ephemeral": {}} for n in names or ("xyz",)], name="abc", ns="test", uid=uid)


def ephemeral_claim(name="abc-xyz", uid="12345", owned=True):
    meta = {"ownerReferences": [{"kind": "Pod", "name": "abc", "uid": uid, "controller": True}]} if owned else {}
    return pvc(name, sc="csi-sc", ns="test", meta=meta)


@pytest.mark.parametrize("case,extra,existing,max_vols,source,want", [
    ("ephemeral volume missing", [], [], 0, "csinode-with-no-limit",
     (U, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    ("ephemeral volume not owned", [ephemeral_claim(owned=False)], [], 0, "csinode-with-no-limit",
     (ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")),
    ("ephemeral volume unbound", [ephemeral_claim()], [], 0, "csinode-with-no-limit", None),
    ("ephemeral doesn't when node volume limit <= pods CSI volume", [ephemeral_claim()], [RUNNING, EBS_TWO], 2,
     "csinode", MAX),
])
def test_csi_limits_ephemeral(case, extra, existing, max_vols, source, want):
    inv = inventory(*csi_objects([EBS], source, max_vols), *extra)
    pre, got = run(vol.NodeVolumeLimits(), ephemeral_pod(), inv, node_info(node(NODE), existing))
    assert pre.code == "Success"
    assert outcome(got) == want


def test_csi_limits_prefilter_skip_and_not():
    inv = inventory(*csi_objects([EBS], "csinode", 2))
    assert vol.NodeVolumeLimits().pre_filter(cycle(pod({"configMap": {}}, {"secret": {}}), [], inv)).status.code == SKIP
    for p in (pod({"configMap": {}}, pvc_vol(f"csi-{EBS}-0")), pod({"configMap": {}}, {"name": "xyz", "ephemeral": {}}),
              pod({"configMap": {}}, {"awsElasticBlockStore": {"volumeID": "aws-inline1"}})):
        assert vol.NodeVolumeLimits().pre_filter(cycle(p, [], inv)).status.code == "Success"


def test_csi_limits_in_tree_translation_is_unknown_not_a_fit():
    """"should count in-tree volumes if migration is enabled": upstream rejects after translating the
    in-tree PVs to CSI; the translated handle is not modelled, so this tool must not say it fits."""
    intree = "kubernetes.io/aws-ebs"
    objs = [pv(f"csi-{intree}-{j}", source={"awsElasticBlockStore": {"volumeID": f"csi-{intree}-{j}"}}) for j in range(4)]
    objs += [pvc(f"csi-{intree}-{j}", volume=f"csi-{intree}-{j}") for j in range(4)]
    objs.append(CSINode.model_validate({"metadata": {"name": NODE, "annotations": {vol.ANN_MIGRATED_PLUGINS: intree}},
                                        "spec": {"drivers": [{"name": d, "allocatable": {"count": 2}}
                                                             for d in (intree, EBS)]}}))
    _, got = run(vol.NodeVolumeLimits(), csi_pod(f"csi-{intree}-0"), inventory(*objs),
                 node_info(node(NODE), [csi_pod(f"csi-{intree}-1", f"csi-{intree}-2", name="x")]))
    assert outcome(got) == ("unknown",)


@pytest.mark.parametrize("case,csidriver,installed,want", [  # TestCSILimitsWithDriverInstalledCheck, gate on
    ("gate enabled - allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set", {}, False,
     None),
    ("gate enabled - fail when driver not installed and PreventPodSchedulingIfMissing is true",
     {"preventPodSchedulingIfMissing": True}, False, (S, f"{EBS} CSI driver is not installed on the node")),
    ("gate enabled - driver installed within limit", {"preventPodSchedulingIfMissing": True}, True, None),
    ("gate enabled - allow scheduling when CSIDriver object missing", None, False, None),
])
def test_csi_driver_installed_check(case, csidriver, installed, want):
    objs = [o for o in csi_objects([EBS], "") if not isinstance(o, CSINode)]
    if csidriver is not None:
        objs.append(CSIDriver.model_validate({"metadata": {"name": EBS}, "spec": csidriver}))
    objs.append(CSINode.model_validate({"metadata": {"name": NODE}, "spec": {"drivers": [
        {"name": EBS, "allocatable": {"count": 4}}] if installed else []}}))
    _, got = run(vol.NodeVolumeLimits(), EBS_ONE, inventory(*objs), node_info(node(NODE)))
    assert outcome(got) == want


@pytest.mark.parametrize("missing", ["CSINode", "VolumeAttachment", "CSIDriver"])
def test_csi_limits_unknown_when_a_kind_was_not_read(missing):
    inv = inventory(*csi_objects([EBS], "csinode", 2), kinds=ALL_KINDS - {missing})
    _, got = run(vol.NodeVolumeLimits(), EBS_ONE, inv, node_info(node(NODE), [RUNNING]))
    assert got.undetermined and missing in got.undetermined


# -- VolumeBinding --------------------------------------------------------------------------------

WAIT_SC, IMMEDIATE_SC = sc("wait-sc"), sc("immediate-sc", "Immediate")
NC, BC = vol.ERR_REASON_NODE_CONFLICT, vol.ERR_REASON_BIND_CONFLICT


def vb(p: Pod, *objs, labels=None, name="node-a", kinds=ALL_KINDS):
    n = node(name, {"kubernetes.io/hostname": name, **(labels or {})})
    pre, got = run(vol.VolumeBinding(), p, inventory(WAIT_SC, IMMEDIATE_SC, *objs, kinds=kinds), node_info(n))
    return (None if pre.code == "Success" and not pre.undetermined else
            ("unknown",) if pre.undetermined else (pre.code, pre.message)), outcome(got)


@pytest.mark.parametrize("case,claims,objs,labels,want_pre,want", [
    ("pod has not pvcs", (), [], None, (SKIP, ""), None),
    ("all bound", ("pvc-a",), [pvc("pvc-a", "wait-sc", "pv-a", bound=True), pv("pv-a", "wait-sc", phase="Available")],
     None, None, None),
    ("PVC does not exist", ("pvc-a",), [], None, (U, 'persistentvolumeclaim "pvc-a" not found'), None),
    ("Part of PVCs do not exist", ("pvc-a", "pvc-b"), [pvc("pvc-a", "wait-sc", "pv-a", bound=True)], None,
     (U, 'persistentvolumeclaim "pvc-b" not found'), None),
    ("immediate claims not bound", ("pvc-a",), [pvc("pvc-a", "immediate-sc")], None, (U, vol.ERR_UNBOUND_IMMEDIATE), None),
    ("unbound claims no matches", ("pvc-a",), [pvc("pvc-a", "wait-sc")], None, None, (U, BC)),
    ("bound and unbound unsatisfied", ("pvc-a", "pvc-b"),
     [pvc("pvc-a", "wait-sc", "pv-a", bound=True), pvc("pvc-b", "wait-sc"),
      pv("pv-a", "wait-sc", affinity={"foo": ["bar"]}, phase="Available")], {"foo": "barbar"}, None, (U, f"{NC}, {BC}")),
    ("pv not found", ("pvc-a",), [pvc("pvc-a", "wait-sc", "pv-a", bound=True)], None, None,
     (U, vol.ERR_REASON_PV_NOT_EXIST)),
    ("pv not found claim lost", ("pvc-a",), [pvc("pvc-a", "wait-sc", "pv-a", bound=True, status={"phase": "Lost"})],
     None, (U, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'), None),
])
def test_volume_binding(case, claims, objs, labels, want_pre, want):
    assert vb(pod(*[pvc_vol(c) for c in claims]), *objs, labels=labels) == (want_pre, want)


GI = "1Gi"


@pytest.mark.parametrize("case,objs,labels,want", [  # binder_test.go FindPodVolumes cases, and the rules behind them
    ("unbound-pvc,pv-same-node", [pvc("unbound", "wait-sc", storage=GI), pv("pv-node1a", "wait-sc", phase="Available",
     capacity="5G", affinity={"kubernetes.io/hostname": ["node-a"]})], None, None),
    ("unbound-pvc,pv-different-node", [pvc("unbound", "wait-sc", storage=GI), pv("pv-node2", "wait-sc", phase="Available",
     capacity="5G", affinity={"kubernetes.io/hostname": ["node-b"]})], None, (U, BC)),
    ("pv too small", [pvc("unbound", "wait-sc", storage="10G"), pv("pv", "wait-sc", phase="Available", capacity="5G")],
     None, (U, BC)),
    ("pv not Available", [pvc("unbound", "wait-sc", storage=GI), pv("pv", "wait-sc", phase="Released", capacity="5G")],
     None, (U, BC)),
    ("access modes not offered", [pvc("unbound", "wait-sc", storage=GI, modes=["ReadWriteMany"]),
     pv("pv", "wait-sc", phase="Available", capacity="5G", modes=["ReadWriteOnce"])], None, (U, BC)),
    ("pv pre-bound to the claim on another node", [pvc("unbound", "wait-sc", storage=GI),
     pv("pv", "wait-sc", capacity="5G", claim=("default", "unbound"), affinity={"kubernetes.io/hostname": ["node-b"]}),
     pv("pv2", "wait-sc", phase="Available", capacity="5G")], None, (U, BC)),
    ("selected node is another", [pvc("unbound", "wait-sc", annotations={vol.ANN_SELECTED_NODE: "node-b"}),
     sc("wait-sc", provisioner="p.example.com")], None, (U, BC)),
    ("provisioning, no topology", [pvc("unbound", "wait-sc", storage=GI), sc("wait-sc", provisioner="p.example.com")],
     None, None),
    ("provisioning, allowedTopologies exclude the node", [pvc("unbound", "wait-sc", storage=GI),
     sc("wait-sc", provisioner="p.example.com", topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z1"]}]}])],
     {ZONE: "z2"}, (U, BC)),
    ("provisioning, allowedTopologies include the node", [pvc("unbound", "wait-sc", storage=GI),
     sc("wait-sc", provisioner="p.example.com", topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z1"]}]}])],
     {ZONE: "z1"}, None),
    ("no-provisioner class", [pvc("unbound", "wait-sc", storage=GI),
                              sc("wait-sc", provisioner=vol.NOT_SUPPORTED_PROVISIONER)], None, (U, BC)),
    ("storage capacity tracked by the driver: unknown", [pvc("unbound", "wait-sc", storage=GI),
     sc("wait-sc", provisioner="driver-with-storage-capacity"),
     CSIDriver.model_validate({"metadata": {"name": "driver-with-storage-capacity"}, "spec": {"storageCapacity": True}})],
     None, ("unknown",)),
])
def test_find_pod_volumes(case, objs, labels, want):
    assert vb(pod(pvc_vol("unbound")), *objs, labels=labels) == (None, want)


def test_two_claims_one_pv_each_takes_the_smallest():
    objs = [pvc("a", "wait-sc", storage="1G"), pvc("b", "wait-sc", storage="4G"),
            pv("small", "wait-sc", phase="Available", capacity="2G"), pv("big", "wait-sc", phase="Available", capacity="5G")]
    assert vb(pod(pvc_vol("b"), pvc_vol("a")), *objs) == (None, None)
    # one PV for two claims and a class that cannot provision: the second finds nothing
    assert vb(pod(pvc_vol("b"), pvc_vol("a")), *objs[:3]) == (None, (U, BC))


def test_tie_between_equal_pvs_that_decides_is_unknown():
    """Two equally small PVs, only one of which also suits the second claim: the scheduler's map
    order decides whether the second claim finds a volume."""
    objs = [pvc("a", "wait-sc", storage="1G"), pvc("b", "wait-sc", storage="1G", modes=["ReadWriteMany"]),
            pv("x", "wait-sc", phase="Available", capacity="2G", modes=["ReadWriteMany"]),
            pv("y", "wait-sc", phase="Available", capacity="2G")]
    assert vb(pod(pvc_vol("a"), pvc_vol("b")), *objs) == (None, ("unknown",))


def test_ephemeral_volumes():
    p = ephemeral_pod()
    assert vb(p)[0] == (U, 'waiting for ephemeral volume controller to create the persistentvolumeclaim "abc-xyz"')
    not_owned = pvc("abc-xyz", "wait-sc", ns="test")
    assert vb(p, not_owned)[0] == (U, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")
    owned = pvc("abc-xyz", "wait-sc", ns="test", meta={"ownerReferences": [
        {"kind": "Pod", "name": "abc", "uid": "12345", "controller": True}]})
    assert vb(p, owned) == (None, (U, BC))


def test_claim_being_deleted():
    deleting = pvc("pvc-a", "wait-sc", meta={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    assert vb(pod(pvc_vol("pvc-a")), deleting)[0] == (U, 'persistentvolumeclaim "pvc-a" is being deleted')


def test_bound_pv_affinity_with_node_name_field_is_ignored():
    """CheckNodeAffinity matches labels only: a matchFields term on metadata.name passes any node."""
    bound = pvc("pvc-a", "wait-sc", "pv-a", bound=True)
    fields = PersistentVolume.model_validate({"metadata": {"name": "pv-a"}, "spec": {"nodeAffinity": {"required": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]}]}}}})
    assert vb(pod(pvc_vol("pvc-a")), bound, fields) == (None, None)


@pytest.mark.parametrize("kinds,want", [
    (ALL_KINDS - {"PersistentVolumeClaim"}, "PersistentVolumeClaim"),
    (ALL_KINDS - {"StorageClass"}, "StorageClass"),
    (ALL_KINDS - {"PersistentVolume"}, "PersistentVolume"),
])
def test_binding_unknown_when_a_kind_was_not_read(kinds, want):
    p = pod(pvc_vol("pvc-a"))
    pre, got = run(vol.VolumeBinding(), p, inventory(pvc("pvc-a", "wait-sc"), WAIT_SC, kinds=kinds), node_info())
    assert pre.undetermined and want in pre.undetermined


def test_binding_in_tree_pv_translated_on_the_node_is_unknown():
    bound = pvc("pvc-a", "wait-sc", "pv-a", bound=True)
    gce = pv("pv-a", "wait-sc", source={"gcePersistentDisk": {"pdName": "d"}})
    csinode = CSINode.model_validate({"metadata": {"name": "node-a", "annotations": {
        vol.ANN_MIGRATED_PLUGINS: "kubernetes.io/gce-pd"}}})
    assert vb(pod(pvc_vol("pvc-a")), bound, gce, csinode) == (None, ("unknown",))
    assert vb(pod(pvc_vol("pvc-a")), bound, gce) == (None, None)  # no CSINode: not translated


def test_storage_views_register():
    from kubectl_dra.model.registry import by_group_kind, parse_object

    for group, kind in [("", "PersistentVolumeClaim"), ("", "PersistentVolume"), ("storage.k8s.io", "StorageClass"),
                        ("storage.k8s.io", "CSINode"), ("storage.k8s.io", "CSIDriver"),
                        ("storage.k8s.io", "VolumeAttachment")]:
        assert (group, kind) in by_group_kind()
    obj = parse_object({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"},
                        "provisioner": "p", "volumeBindingMode": "WaitForFirstConsumer"})
    assert isinstance(obj, StorageClass) and obj.volume_binding_mode == "WaitForFirstConsumer"
