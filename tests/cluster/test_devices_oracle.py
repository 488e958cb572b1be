"""``kubectl dra devices`` against the real kube-scheduler (v1.37.2): "N free for class C on node X"
holds only if a claim for N devices of C, its pod pinned to X, is allocated by the scheduler, and
one for N+1 is not (docs/kubernetes/devices.md §5).

Each scenario has its own node, driver and pool, so what one allocates never changes another's
answer. All scenarios run together in three phases, each waiting on the scheduler's decisions:
what the scenario holds before the question (setup pods, bound), the N+1 pods (every one must be
unschedulable), then the N pods (every one must be bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pytest
from clusterobjects import driver_class, ready_node, scheduled_false, settle, wait_for
from loader import load

NAMESPACE = "devices-oracle"
DOMAIN = "devices.example.com"


def drv(scenario: str) -> str:
    return f"{scenario}.{DOMAIN}"


def device(name: str, *, attributes: dict | None = None, capacity: dict | None = None, taints: list | None = None,
           consumes: dict | None = None, multi: bool = False) -> dict:
    out: dict = {"name": name}
    if attributes:
        out["attributes"] = {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in capacity.items()}
    if taints:
        out["taints"] = taints
    if consumes:
        out["consumesCounters"] = [{"counterSet": "gpu", "counters": {k: {"value": v} for k, v in consumes.items()}}]
    if multi:
        out["allowMultipleAllocations"] = True
    return out


def slice_(scenario: str, devices: list[dict], *, node: str | None = None, suffix: str = "", generation: int = 1,
           count: int = 1, counters: dict | None = None, all_nodes: bool = False) -> dict:
    spec: dict = {"driver": drv(scenario), "pool": {"name": scenario, "generation": generation,
                                                   "resourceSliceCount": count}}
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node or f"dev-{scenario}"
    if counters:
        spec["sharedCounters"] = [{"name": "gpu", "counters": {k: {"value": v} for k, v in counters.items()}}]
    else:
        spec["devices"] = devices
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{scenario}{suffix}"}, "spec": spec}


def device_class(name: str, expression: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def claim(name: str, klass: str, count: int = 1, *, admin: bool = False, selector: str | None = None) -> dict:
    exactly: dict = {"deviceClassName": klass, "allocationMode": "ExactCount", "count": count}
    if admin:
        exactly["adminAccess"] = True
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": exactly}]}}}


def pod(name: str, claim_name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}]}}


@dataclass
class Scenario:
    name: str
    objects: list[dict]  # slices, classes, rules (the node is added)
    klass: str  # the class asked about (--class)
    expect: int  # the free count this scenario is built to have
    holds: list[dict] = field(default_factory=list)  # claims allocated before the question (a pod each)
    after: Callable | None = None  # what happens once they are allocated (plane, scenario)
    row: dict = field(default_factory=dict)  # other counts of its row, checked too

    @property
    def node(self) -> str:
        return f"dev-{self.name}"


def _all(scenario: str) -> dict:
    return driver_class(drv(scenario))


def plain(name: str, n: int, **kw) -> list[dict]:
    return [slice_(name, [device(f"d{i}", attributes={"index": i}, **kw) for i in range(n)]), _all(name)]


def partitioned(name: str) -> list[dict]:
    """One 80Gi GPU cut as a whole, two halves or four quarters (one shared counter, mem)."""
    shapes = [("full", 1, "80Gi"), ("half", 2, "40Gi"), ("quarter", 4, "20Gi")]
    devices = [device(f"{shape}-{i}", attributes={"profile": shape}, consumes={"mem": mem})
               for shape, count, mem in shapes for i in range(count)]
    return [slice_(name, [], suffix="-counters", count=2, counters={"mem": "80Gi"}),
            slice_(name, devices, suffix="-devices", count=2), _all(name),
            *[device_class(f"{name}-{shape}", f'device.driver == "{drv(name)}" && '
                                              f'device.attributes["{drv(name)}"].profile == "{shape}"')
              for shape, _, _ in shapes]]


def sliced(name: str) -> list[dict]:
    """Four memory slices s0..s3 (MIG-like): 1g partitions take one, 2g two adjacent, 4g all."""
    parts = [(f"1g-{i}", "1g", [f"s{i}"]) for i in range(4)] + \
        [("2g-0", "2g", ["s0", "s1"]), ("2g-1", "2g", ["s2", "s3"]), ("4g-0", "4g", ["s0", "s1", "s2", "s3"])]
    devices = [device(n, attributes={"profile": p}, consumes={s: "1" for s in slices}) for n, p, slices in parts]
    return [slice_(name, [], suffix="-counters", count=2, counters={f"s{i}": "1" for i in range(4)}),
            slice_(name, devices, suffix="-devices", count=2), _all(name),
            device_class(f"{name}-2g", f'device.driver == "{drv(name)}" && device.attributes["{drv(name)}"].profile == "2g"')]


def shareable(name: str) -> list[dict]:
    """Two devices that allow multiple allocations: 40Gi each, 10Gi per share by default."""
    policy = {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}
    return [slice_(name, [device(f"d{i}", attributes={"index": i},
                                 capacity={"memory": {"value": "40Gi", "requestPolicy": policy}}, multi=True)
                          for i in range(2)]), _all(name)]


def on_first(scenario: str) -> str:
    """The shares held before the question all go to d0: which device the scheduler picks for a share
    is its choice (a run once spread four shares over both), what is left afterwards is the question."""
    return f'device.attributes["{drv(scenario)}"].index == 0'



def held(scenario: str, n: int, klass: str | None = None, **kw) -> list[dict]:
    return [claim(f"{scenario}-hold-{i}", klass or drv(scenario), **kw) for i in range(n)]


def delete_claim(plane, scenario: "Scenario") -> None:
    name = scenario.holds[0]["metadata"]["name"]
    plane.request("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{name}")
    wait_for(f"claim {name} being deleted", lambda: plane.request(
        "GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{name}")["metadata"].get(
        "deletionTimestamp"))


NO_SCHEDULE = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "example.com/broken", "value": "ecc", "effect": "NoExecute"}


def scenarios() -> list[Scenario]:
    d = drv
    return [
        Scenario("plain", plain("plain", 4), d("plain"), 4, row={"total": 4, "allocated": 0}),
        Scenario("taken", plain("taken", 4), d("taken"), 2, holds=held("taken", 2), row={"allocated": 2}),
        Scenario("cel-attr", [slice_("cel-attr", [device(f"d{i}", attributes={"model": m}) for i, m in
                                                  enumerate(["a100", "h100", "a100", "h100", "h100"])]),
                              _all("cel-attr"),
                              device_class("cel-attr-h100", f'device.driver == "{d("cel-attr")}" && '
                                                            f'device.attributes["{d("cel-attr")}"].model == "h100"')],
                 "cel-attr-h100", 2, holds=held("cel-attr", 1, "cel-attr-h100"), row={"total": 3, "allocated": 1}),
        Scenario("cel-capacity", [slice_("cel-capacity", [device(f"d{i}", capacity={"memory": m}) for i, m in
                                                          enumerate(["80Gi", "20Gi", "40Gi", "20Gi"])]),
                                  device_class("cel-capacity-big", f'device.driver == "{d("cel-capacity")}" && device.'
                                               f'capacity["{d("cel-capacity")}"].memory.compareTo(quantity("40Gi")) >= 0')],
                 "cel-capacity-big", 2, row={"total": 2}),
        Scenario("noschedule", [slice_("noschedule", [device(f"d{i}", taints=[NO_SCHEDULE] if i == 1 else None)
                                                      for i in range(3)]), _all("noschedule")],
                 d("noschedule"), 2, row={"tainted": 1}),
        Scenario("noexecute", [slice_("noexecute", [device(f"d{i}", taints=[NO_EXECUTE] if i < 2 else None)
                                                    for i in range(3)]), _all("noexecute")],
                 d("noexecute"), 1, row={"tainted": 2}),
        Scenario("rule", [*plain("rule", 3), {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "devices-oracle-rule"},
            "spec": {"deviceSelector": {"driver": d("rule"), "pool": "rule", "device": "d0"},
                     "taint": {"key": "example.com/drain", "value": "now", "effect": "NoSchedule"}}}],
                 d("rule"), 2, row={"tainted": 1}),
        Scenario("outdated", [slice_("outdated", [device("old-0"), device("old-1"), device("old-2")], suffix="-g1"),
                              slice_("outdated", [device("new-0")], suffix="-g2", generation=2), _all("outdated")],
                 d("outdated"), 1, row={"total": 1, "outdated": 3}),
        Scenario("incomplete", [slice_("incomplete", [device("d0"), device("d1")], count=2), _all("incomplete")],
                 d("incomplete"), 0, row={"total": 2, "blocked": 2}),
        Scenario("deleting", plain("deleting", 2), d("deleting"), 1, holds=held("deleting", 1), after=delete_claim,
                 row={"allocated": 1}),
        Scenario("admin", plain("admin", 2), d("admin"), 2, holds=held("admin", 1, admin=True),
                 row={"allocated": 0, "admin": 1}),
        Scenario("part-all", partitioned("part-all"), d("part-all"), 2,
                 holds=held("part-all", 1, "part-all-half"), row={"allocated": 1}),
        Scenario("part-quarter", partitioned("part-quarter"), "part-quarter-quarter", 2,
                 holds=held("part-quarter", 1, "part-quarter-half")),
        Scenario("part-half", partitioned("part-half"), "part-half-half", 1,
                 holds=held("part-half", 1, "part-half-half")),
        Scenario("part-full", partitioned("part-full"), "part-full-full", 0,
                 holds=held("part-full", 1, "part-full-quarter")),
        Scenario("mig-all", sliced("mig-all"), d("mig-all"), 3,
                 holds=held("mig-all", 1, selector=f'device.attributes["{d("mig-all")}"].profile == "1g"'),
                 row={"available": 4}),
        Scenario("mig-2g", sliced("mig-2g"), "mig-2g-2g", 1,
                 holds=held("mig-2g", 1, selector=f'device.attributes["{d("mig-2g")}"].profile == "1g"')),
        Scenario("shares", shareable("shares"), d("shares"), 2, holds=held("shares", 3, selector=on_first("shares")),
                 row={"allocated": 1}),
        Scenario("shares-full", shareable("shares-full"), d("shares-full"), 1,
                 holds=held("shares-full", 4, selector=on_first("shares-full")), row={"blocked": 1}),
        Scenario("all-nodes", [slice_("all-nodes", [device("d0"), device("d1")], all_nodes=True), _all("all-nodes")],
                 d("all-nodes"), 2),
    ]


SCENARIOS = scenarios()


@pytest.fixture(scope="module")
def oracle(full_cluster, tmp_path_factory, dra_module):
    plane = full_cluster
    admin_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": NAMESPACE, "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    load(plane, [admin_ns, *[ready_node(s.node) for s in SCENARIOS], *[o for s in SCENARIOS for o in s.objects]])
    holds = [(s, c) for s in SCENARIOS for c in s.holds]
    load(plane, [c for _, c in holds] + [pod(c["metadata"]["name"], c["metadata"]["name"], s.node) for s, c in holds])
    for s, c in holds:
        got = settle(plane, NAMESPACE, c["metadata"]["name"])
        assert got["spec"].get("nodeName") == s.node, (s.name, got["status"])
    for s in SCENARIOS:
        if s.after:
            s.after(plane, s)
    kubeconfig = str(plane.kubeconfig(tmp_path_factory.mktemp("devices") / "kubeconfig", namespace=NAMESPACE))
    answers = {}
    for s in SCENARIOS:
        result = dra_module("devices", "--kubeconfig", kubeconfig, "--class", s.klass, "--node", s.node, "-o", "json")
        assert result.exit_code == 0, (s.name, result)
        answers[s.name] = result.json()
    # N+1 first: none may be allocated (then they go, so the N claims find the same state)
    more = {s.name: _free(answers[s.name]) + 1 for s in SCENARIOS}
    load(plane, [o for s in SCENARIOS for o in (claim(f"{s.name}-more", s.klass, more[s.name]),
                                                   pod(f"{s.name}-more", f"{s.name}-more", s.node))])
    refused = {s.name: settle(plane, NAMESPACE, f"{s.name}-more") for s in SCENARIOS}
    for s in SCENARIOS:
        plane.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{s.name}-more?gracePeriodSeconds=0")
        plane.request("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{s.name}-more")
    asked = [s for s in SCENARIOS if _free(answers[s.name]) > 0]
    load(plane, [o for s in asked for o in (claim(f"{s.name}-exact", s.klass, _free(answers[s.name])),
                                               pod(f"{s.name}-exact", f"{s.name}-exact", s.node))])
    taken = {s.name: settle(plane, NAMESPACE, f"{s.name}-exact") for s in asked}
    yield answers, refused, taken
    # the pool every node reaches is every other test's too (a node's device story): it goes with this module
    plane.request("DELETE", "/apis/resource.k8s.io/v1/resourceslices/all-nodes")


def _rows(answer: dict) -> list[dict]:
    return answer["pools"]


def _free(answer: dict) -> int:
    """What the answer says a request pinned to the node can take: its pools' free counts summed
    (each pool's counters are its own; a pool every node reaches is one row)."""
    frees = [row["free"] for row in _rows(answer)]
    assert None not in frees, answer
    return sum(frees)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_free_is_what_the_scheduler_allocates(oracle, scenario):
    answers, refused, taken = oracle
    answer = answers[scenario.name]
    assert _free(answer) == scenario.expect, answer
    for key, value in scenario.row.items():
        assert sum(row[key] for row in _rows(answer)) == value, (key, answer)
    more = refused[scenario.name]
    assert not more["spec"].get("nodeName") and scheduled_false(more), (
        f"the scheduler allocated {scenario.expect + 1} devices of {scenario.klass}: devices said {scenario.expect}",
        more["status"])
    if scenario.expect:
        exact = taken[scenario.name]
        assert exact["spec"].get("nodeName") == scenario.node, (
            f"the scheduler did not allocate {scenario.expect} devices of {scenario.klass}", exact["status"])


# -- ResourcePoolStatusRequest (KEP-5677, alpha: DRAResourcePoolStatus, on in this control plane) ------------

RPSR = "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests"
PARTITIONED = {"part-all", "part-quarter", "part-half", "part-full", "mig-all", "mig-2g"}
HARD = ("NoSchedule", "NoExecute")


def _pool_status(plane, scenario: Scenario) -> dict | None:
    """The controller's answer for the scenario's driver (None: it wrote none, as for an incomplete pool)."""
    name = f"devices-oracle-{scenario.name}"
    spec = {"driver": drv(scenario.name)}
    if scenario.name in PARTITIONED:
        spec["defaultPartitionTypeAttribute"] = f"{drv(scenario.name)}/profile"
    plane.request("POST", RPSR, {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
                                 "metadata": {"name": name}, "spec": spec})
    done = wait_for(f"ResourcePoolStatusRequest {name} completed", lambda: (plane.request(
        "GET", f"{RPSR}/{name}").get("status") or {}).get("conditions"), timeout=30)
    assert [c["type"] for c in done] == ["Complete"], done
    (pool,) = plane.request("GET", f"{RPSR}/{name}")["status"]["pools"]
    return pool


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s.name != "incomplete"],
                         ids=[s.name for s in SCENARIOS if s.name != "incomplete"])
def test_resource_pool_status_request_agrees_where_documented(oracle, full_cluster, dra, tmp_path, scenario):
    """What the controller writes for the scenario's pool (after the oracle's allocations) against
    ``devices`` for the same pool: equal, or different exactly as the README's comparison says.
    (An incomplete pool: the controller writes no status at all, README.)"""
    plane = full_cluster
    kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE))
    args = ["devices", "--kubeconfig", kubeconfig, "--driver", drv(scenario.name), "-o", "json", "--devices"]
    if scenario.name in PARTITIONED:
        args += ["--partition-attribute", f"{drv(scenario.name)}/profile"]
    answer = dra(*args)
    assert answer.exit_code == 0, answer
    (row,) = answer.json()["pools"]
    theirs = _pool_status(plane, scenario)
    current = [d for d in row["devices"] if d["state"] != "Outdated"]
    assert (theirs["poolName"], theirs["generation"]) == (row["pool"], row["generation"])
    assert theirs["totalDevices"] == row["total"] and theirs["allocatedDevices"] == row["allocated"]
    assert theirs.get("nodeName") == (row["node"] if not row["node"].startswith("<") else None)
    # unavailable: every device with a NoSchedule/NoExecute taint, held or not (ours: free but tainted)
    tainted = [d for d in current if any(t.split(":")[-1].split("(")[0] in HARD for t in d["taints"])]
    assert theirs["unavailableDevices"] == len(tainted)
    counters, shareable = bool(row["counters"]), bool(row["capacity"])
    if not counters and not shareable:
        assert theirs["availableDevices"] == row["free"], (theirs, row)
    elif counters:  # theirs: every partition not held; ours: how many fit together in the counters
        assert theirs["availableDevices"] == row["total"] - row["allocated"] - len(tainted) >= row["free"]
    else:  # theirs: a shared device is allocated; ours: it takes another share while capacity lasts
        assert theirs["availableDevices"] == row["total"] - row["allocated"] <= row["free"]
    if shareable:
        summary = theirs["shareableSummary"]
        assert (summary["fullyAvailableDevices"], summary["partiallyAvailableDevices"]) == (
            row["fullyFreeShareable"], row["partlyFreeShareable"])
        assert [(c["name"], c["total"], c["consumed"], c["available"]) for c in summary["capacity"]] == [
            (c["name"].split("/")[-1], c["total"], c["consumed"], c["remaining"]) for c in row["capacity"]]
    if scenario.name.startswith("part-"):
        assert [(p["type"], p["total"], p["allocatable"]) for p in theirs["partitionSummary"]] == [
            (s["shape"], s["devices"], s["fit"]) for s in row["shapes"]]
    elif scenario.name.startswith("mig-"):  # partitions of one type that consume different counters
        assert "partitionSummary" not in theirs and theirs["validationError"].startswith("PartitionCostMismatch")
        assert all(s["fit"] is not None for s in row["shapes"])
