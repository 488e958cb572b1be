"""``status.reservedFor`` entries that name a PodGroup or a workload: their pods, found through
indexes (a claims list asks this of every claim, so a walk over every pod per claim is quadratic)."""

from __future__ import annotations

from builders import claim, pod, pod_group, reserved_group, uid

from kubectl_dra.claims.reservations import resolve
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import parse_object


def workload(kind: str, name: str, owner: tuple[str, str] | None = None, namespace: str = "ml") -> dict:
    meta: dict = {"name": name, "namespace": namespace, "uid": uid(f"{kind}/{namespace}/{name}")}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                                    "uid": uid(f"{owner[0]}/{namespace}/{owner[1]}"), "controller": True}]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {}}


def inventory_of(objects) -> Inventory:
    inventory = Inventory()
    inventory.extend(parse_object(o) for o in objects)
    inventory.read_kinds |= {"Pod", "PodGroup", "Deployment", "ReplicaSet", "ResourceClaim"}
    return inventory


def deployment_ref(name: str) -> dict:
    return {"apiGroup": "apps", "resource": "deployments", "name": name, "uid": uid(f"Deployment/ml/{name}")}


def test_a_workload_reservation_lists_its_pods_direct_and_through_replicasets_in_order():
    objects = [workload("Deployment", "web"), workload("Deployment", "db"),
               workload("ReplicaSet", "web-abc", owner=("Deployment", "web")),
               workload("ReplicaSet", "db-xyz", owner=("Deployment", "db")),
               pod("web-abc-1", owner=("apps/v1", "ReplicaSet", "web-abc")),
               pod("web-direct", owner=("apps/v1", "Deployment", "web")),
               pod("db-xyz-1", owner=("apps/v1", "ReplicaSet", "db-xyz")),
               pod("web-abc-2", owner=("apps/v1", "ReplicaSet", "web-abc")),
               pod("loose")]
    c = claim("shared", reserved_for=[deployment_ref("web"), deployment_ref("db")])
    inventory = inventory_of([*objects, c])
    parsed = inventory.claims()[0]
    web, db = (resolve(ref, parsed, inventory) for ref in parsed.status.reserved_for)
    assert (web.resolved, web.pods) == ("exists", ["ml/web-abc-1", "ml/web-direct", "ml/web-abc-2"])
    assert (db.resolved, db.pods) == ("exists", ["ml/db-xyz-1"])


def test_every_claim_reserved_for_a_group_or_workload_costs_its_own_pods(monkeypatch):
    """n claims, each reserved for its own PodGroup (2 members) and its own Deployment (2 pods
    through a ReplicaSet): every pod's group and controller are read once per list, not per claim."""
    n = 30
    objects = []
    for i in range(n):
        objects += [pod_group(f"g{i}"), pod(f"g{i}-0", group=f"g{i}"), pod(f"g{i}-1", group=f"g{i}"),
                    workload("Deployment", f"d{i}"), workload("ReplicaSet", f"d{i}-rs", owner=("Deployment", f"d{i}")),
                    pod(f"d{i}-rs-0", owner=("apps/v1", "ReplicaSet", f"d{i}-rs")),
                    pod(f"d{i}-rs-1", owner=("apps/v1", "ReplicaSet", f"d{i}-rs")),
                    claim(f"c{i}", reserved_for=[reserved_group(f"g{i}"), deployment_ref(f"d{i}")])]
    inventory = inventory_of(objects)
    reads = []
    group_of = Pod.pod_group_name
    monkeypatch.setattr(Pod, "pod_group_name", property(lambda self: reads.append(1) or group_of.fget(self)))
    results = [[resolve(ref, c, inventory) for ref in c.status.reserved_for] for c in inventory.claims()]
    for i, (group, deployment) in enumerate(results):
        assert group.pods == [f"ml/g{i}-0", f"ml/g{i}-1"] and group.resolved == "exists"
        assert deployment.pods == [f"ml/d{i}-rs-0", f"ml/d{i}-rs-1"]
    assert len(reads) == 4 * n  # each pod once (the index), where it was every pod for every claim


def test_agent_reports_are_indexed_once_per_list_and_keep_the_uid_rule(monkeypatch):
    """``claims -o wide --snapshot`` with every node's report: each claim finds its own entries
    (one index per list, it was every report's claims for every claim); an entry about an earlier
    object of the same name (another UID) is not shown."""
    import kubectl_dra.claims.explain as explain
    from kubectl_dra.claims.explain import node_views

    n = 20
    objects = []
    for i in range(n):
        c = claim(f"c{i}")
        objects.append(c)
        entry = {"namespace": "ml", "name": f"c{i}", "uid": c["metadata"]["uid"] if i % 2 else uid("an-earlier-one"),
                 "prepared": True, "findings": [{"code": "PreparedNotReserved", "severity": "warning", "message": "m"}]}
        objects.append({"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "NodeEnforcementReport",
                        "metadata": {"name": f"node-{i}", "uid": uid(f"report/{i}")},
                        "status": {"observedAt": "2026-11-23T20:00:00Z", "claims": [entry]}})
    inventory = inventory_of(objects)
    built = []
    index = explain._report_claims
    monkeypatch.setattr(explain, "_report_claims", lambda inv: built.append(1) or index(inv))
    for c in inventory.claims():
        views, findings = node_views(c, inventory)
        i = int(c.name[1:])
        assert [v.node for v in views] == ([f"node-{i}"] if i % 2 else [])
        assert [f.code for f in findings] == (["PreparedNotReserved"] if i % 2 else [])
    assert len(built) == 1
