"""What `kubectl dra explain pod` says Karpenter will launch for a pending pod, against what the real
Karpenter launches (kwok provider, docs/kubernetes/nodeoverlay.md §8). One scenario at a time:
NodePools and NodeOverlays are created and reconciled, a pod no node can take is created,
kube-scheduler marks it Unschedulable, and

- explain pod (the tier's catalog, the gate on) predicts the NodePool, the NodeClaim's requests,
  the instance types it allows (capacity and requirements after overlays) and the offerings the
  provider may pick (the cheapest by the provider's own price);
- Karpenter's NodeClaim must carry exactly that NodePool, those requests and those instance types;
  its Node the instance type, zone and capacity type of one predicted pick and the labels the
  catalog gives that type; and Karpenter's NodePool cost (``karpenter_nodepools_cost_total``, its
  only price that shows, overlays included) must equal the price the prediction gives that
  offering. What is not observable: which of several equally cheap zones the provider samples
  (either is accepted), the order Karpenter keeps the types in (the NodeClaim lists them by name),
  and consolidation's price decisions (no kwok node here becomes Ready, so Karpenter reports
  "DisruptionBlocked: Node isn't initialized" and never consolidates).

A scenario where Karpenter launches nothing waits for its own word on the pod (its
FailedScheduling event) and finds no NodeClaim, as the prediction says."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request

import pytest
import yaml

import kwok
from clusterobjects import wait_for
from test_overlay_oracle import FAMILY, CPU, CAPACITY_TYPE, NODEPOOL, _ready, _verdict, overlay, req

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
GPU = "example.com/gpu"


def pool(name: str, weight: int | None = None, requirements=(), taints=()) -> dict:
    spec = {"template": {"spec": {"requirements": [req("kubernetes.io/arch", "In", "amd64"), *requirements],
                                  "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                                   "name": "default"}, **({"taints": list(taints)} if taints else {})}}}
    if weight is not None:
        spec["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def pod(requests: dict, node_selector=None, affinity=None, tolerations=()) -> dict:
    limits = {k: v for k, v in requests.items() if "/" in k}  # extended resources: limits = requests
    spec = {"containers": [{"name": "c", "image": "registry.invalid/app",
                            "resources": {"requests": requests, **({"limits": limits} if limits else {})}}],
            "terminationGracePeriodSeconds": 0}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": affinity}]}}}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": spec}


NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

# (id, NodePools, NodeOverlays, the pod): what each covers is in its id
LAUNCHES = [
    ("plain-cpu", [pool("p")], [], pod({"cpu": "3"})),
    ("capacity-only-through-an-overlay", [pool("p")],
     [overlay("gpu", 10, [req(FAMILY, "In", "c")], capacity={GPU: "2"})], pod({"cpu": "3", GPU: "1"})),
    ("price-adjustment-counted", [pool("p")],
     [overlay("cheaper-c", 10, [req(FAMILY, "In", "c")], priceAdjustment="-25%")], pod({"cpu": "3"})),
    ("overlay-price-does-not-steer-the-provider", [pool("p")],
     [overlay("cheap-m", 10, [req(INSTANCE_TYPE, "In", "m-4x-amd64-linux")], price="0.01")], pod({"cpu": "3"})),
    ("on-demand-only-with-absolute-adjustment", [pool("p", requirements=[req(CAPACITY_TYPE, "In", "on-demand")])],
     [overlay("less", 10, [req(CAPACITY_TYPE, "In", "on-demand")], priceAdjustment="-0.03")], pod({"cpu": "1"})),
    ("higher-weight-pool-first", [pool("a", 10), pool("b", 50)], [], pod({"cpu": "1"})),
    ("equal-weight-pools-by-name-descending", [pool("a", 10), pool("b", 10)], [], pod({"cpu": "1"})),
    ("untolerated-pool-taint-skipped", [pool("a", 10), pool("b", 50, taints=[NO_SCHEDULE])], [], pod({"cpu": "1"})),
    ("capacity-overlay-scoped-to-a-pool", [pool("a", 10), pool("b", 50)],
     [overlay("gpu-a", 10, [req(NODEPOOL, "In", "a")], capacity={GPU: "1"})], pod({"cpu": "1", GPU: "1"})),
    ("pod-node-selector", [pool("p")], [], pod({"cpu": "3"}, node_selector={FAMILY: "m"})),
    ("pod-affinity-gt", [pool("p")], [], pod({"cpu": "1"}, affinity=[req(CPU, "Gt", "4")])),
    ("capacity-conflict-decides-the-amount", [pool("p")],
     [overlay("one", 10, capacity={GPU: "1"}), overlay("two", 10, capacity={GPU: "2"})], pod({"cpu": "1", GPU: "2"})),
]

NONE = [
    ("too-big-for-every-type", [pool("p")], [], pod({"cpu": "32"})),
    ("runtime-invalid-overlay-gives-nothing", [pool("p")],
     [overlay("bogus", 10, [req(CAPACITY_TYPE, "In", "bogus")], capacity={GPU: "1"})], pod({"cpu": "1", GPU: "1"})),
    ("pool-taint-not-tolerated", [pool("p", taints=[NO_SCHEDULE])], [], pod({"cpu": "1"})),
]


def _scoped(sid: str, pools: list[dict], overlays: list[dict], the_pod: dict):
    """Copies named after the scenario (NodePools, the overlays' NodePool requirements, the pod)."""
    names = {p["metadata"]["name"]: f"{sid}-{p['metadata']['name']}" for p in pools}
    pools, overlays, the_pod = json.loads(json.dumps([pools, overlays, the_pod]))
    for p in pools:
        p["metadata"]["name"] = names[p["metadata"]["name"]]
    for o in overlays:
        o["metadata"]["name"] = f"{sid}-{o['metadata']['name']}"
        for r in o["spec"]["requirements"]:
            if r["key"] == NODEPOOL:
                r["values"] = [names[v] for v in r["values"]]
    the_pod["metadata"] = {"name": sid, "namespace": "default"}
    return pools, overlays, the_pod


@contextlib.contextmanager
def _pending(plane, dra, tmp_path, scenario, objects=()):
    """The scenario's NodePools and overlays reconciled, ``objects`` created, its pod (named after the
    scenario) pending; yields the world, the NodePools and explain pod's prediction; deletes all."""
    sid, pools, overlays, the_pod = scenario
    pools, overlays, the_pod = _scoped(sid, pools, overlays, the_pod)
    world = _World(plane)
    try:
        world.setup(pools, overlays, sid)
        for path, obj in objects:
            world.create(path, obj)
        world.create("/api/v1/namespaces/default/pods", the_pod)
        yield world, pools, _explain(dra, plane, tmp_path, pools, sid)
    finally:
        _delete_pod(plane, sid)
        world.teardown(pools)


class _World:
    """Create a scenario's objects, wait on Karpenter, delete them all (NodeClaims and Nodes too)."""

    def __init__(self, plane):
        self.plane, self.created = plane, []

    def create(self, path: str, obj: dict) -> None:
        try:
            self.plane.request("POST", path, obj)
        except urllib.error.HTTPError as exc:
            pytest.fail(f"the API server refused {obj['kind']} {obj['metadata']['name']}: {exc.read()[:400]!r}")
        self.created.append(f"{path}/{obj['metadata']['name']}")

    def setup(self, pools: list[dict], overlays: list[dict], sid: str) -> None:
        for p in pools:
            self.create("/apis/karpenter.sh/v1/nodepools", p)
        for p in pools:
            wait_for(f"NodePool {p['metadata']['name']} Ready", lambda p=p: _ready(self.plane, p["metadata"]["name"]))
        sentinel = overlay(f"{sid}-zz-sentinel", 1, [req(INSTANCE_TYPE, "In", "no-such-type")], price="1")
        for o in [*overlays, sentinel]:
            self.create("/apis/karpenter.sh/v1alpha1/nodeoverlays", o)
        # Karpenter's order puts the sentinel last: its verdict means every overlay's is written
        wait_for("Karpenter's verdict on the sentinel", lambda: _verdict(self.plane.request(
            "GET", f"/apis/karpenter.sh/v1alpha1/nodeoverlays/{sentinel['metadata']['name']}")))

    def node_claims(self, pools: list[dict]) -> list[dict]:
        names = {p["metadata"]["name"] for p in pools}
        return [c for c in self.plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]
                if c["metadata"].get("labels", {}).get(NODEPOOL) in names]

    def teardown(self, pools: list[dict]) -> None:
        claims = [f"/apis/karpenter.sh/v1/nodeclaims/{c['metadata']['name']}" for c in self.node_claims(pools)]
        for path in [*reversed(self.created), *claims]:
            try:
                self.plane.request("DELETE", path)
            except urllib.error.HTTPError:
                pass
        for path in [*self.created, *claims]:
            wait_for(f"{path} to be deleted", lambda path=path: self.plane.absent(path))
        # the kwok provider creates a Node after its NodeClaim launched, so one may outlive a claim
        # deleted early: delete what remains until nothing does
        wait_for("the scenario's nodes to be deleted", lambda: not self._delete_nodes(pools))

    def _delete_nodes(self, pools: list[dict]) -> list[str]:
        names = {p["metadata"]["name"] for p in pools}
        left = [n["metadata"]["name"] for n in self.plane.request("GET", "/api/v1/nodes")["items"]
                if n["metadata"].get("labels", {}).get(NODEPOOL) in names]
        for name in left:
            try:
                self.plane.request("DELETE", f"/api/v1/nodes/{name}")
            except urllib.error.HTTPError:
                pass
        return left


def _explain(dra, plane, tmp_path, pools: list[dict], name: str) -> dict:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(kwok.catalog([p["metadata"]["name"] for p in pools])))
    result = dra("explain", "pod", name, "-n", "default", "--kubeconfig", str(plane.kubeconfig(tmp_path / "kubeconfig")),
                 "--catalog", str(catalog), "--feature-gate", "on", "-o", "json")
    assert result.exit_code in (0, 4), result
    launch = result.json()["karpenter"]
    assert launch is not None, result.json()
    return launch


def _cost(url: str, node_pool: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(url, timeout=5).read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "karpenter_nodepools_cost_total" and sample.labels.get("nodepool") == node_pool:
                return sample.value or None
    return None


@pytest.mark.parametrize("scenario", LAUNCHES, ids=[s[0] for s in LAUNCHES])
def test_the_node_karpenter_launches_is_the_predicted_one(karpenter, dra, tmp_path, scenario):
    plane, proc = karpenter
    with _pending(plane, dra, tmp_path, scenario) as (world, pools, predicted):
        [claim] = wait_for("Karpenter's NodeClaim", lambda: world.node_claims(pools), timeout=90)
        chosen = next(p for p in predicted["nodePools"] if p["name"] == predicted["nodePool"])

        assert claim["metadata"]["labels"][NODEPOOL] == predicted["nodePool"], (claim["metadata"], predicted)
        assert claim["spec"]["resources"]["requests"] == chosen["requests"]
        [allowed] = [r["values"] for r in claim["spec"]["requirements"] if r["key"] == INSTANCE_TYPE]
        assert sorted(allowed) == sorted(t["name"] for t in chosen["instanceTypes"]), (allowed, chosen)

        name = wait_for("the NodeClaim's node", lambda: plane.request(
            "GET", f"/apis/karpenter.sh/v1/nodeclaims/{claim['metadata']['name']}").get("status", {}).get("nodeName"))
        labels = plane.request("GET", f"/api/v1/nodes/{name}")["metadata"]["labels"]
        got = (labels[INSTANCE_TYPE], labels["topology.kubernetes.io/zone"], labels[CAPACITY_TYPE])
        picks = {(o["instanceType"], o["zone"], o["capacityType"]): o for o in chosen["providerPick"]}
        assert got in picks, (got, list(picks))
        [catalog_type] = [t for t in kwok.catalog([])["instanceTypes"] if t["name"] == got[0]]
        assert catalog_type["labels"].items() <= labels.items(), (catalog_type["labels"], labels)

        cost = wait_for(f"karpenter_nodepools_cost_total of {predicted['nodePool']}",
                        lambda: _cost(proc.metrics_url, predicted["nodePool"]), timeout=60)
        assert cost == pytest.approx(picks[got]["price"], rel=1e-9), (cost, picks[got])


@pytest.mark.parametrize("scenario", NONE, ids=[s[0] for s in NONE])
def test_when_no_nodepool_can_launch_karpenter_launches_nothing(karpenter, dra, tmp_path, scenario):
    plane, _ = karpenter
    with _pending(plane, dra, tmp_path, scenario) as (world, pools, predicted):
        assert predicted["nodePool"] is None, predicted
        assert all(p["refused"] for p in predicted["nodePools"]), predicted
        wait_for("Karpenter's word that it cannot schedule the pod", lambda: _karpenter_gave_up(plane, scenario[0]),
                 timeout=90)
        assert world.node_claims(pools) == []


def _karpenter_gave_up(plane, name: str) -> str | None:
    """The message of Karpenter's FailedScheduling event on pod ``name``, once there is one."""
    events = plane.request("GET", f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{name}")
    return next((e["message"] for e in events["items"]
                 if e["reason"] == "FailedScheduling" and e.get("source", {}).get("component") == "karpenter"), None)


def _delete_pod(plane, name: str) -> None:
    path = f"/api/v1/namespaces/default/pods/{name}"
    try:
        plane.request("DELETE", path)
    except urllib.error.HTTPError:
        pass
    wait_for(f"pod {name} to be deleted", lambda: plane.absent(path))


KARPENTER_SKIPS_DRA = ("Failed to schedule pod, pod has Dynamic Resource Allocation requirements that are not yet "
                       "supported by Karpenter")  # scheduling/scheduler.go, events.go (v1.14.1)


def test_a_pod_with_claims_gets_no_node_as_predicted(karpenter, dra, tmp_path):
    """Karpenter v1.14.1 runs with --ignore-dra-requests=true by default: a pod with ResourceClaims
    gets no NodeClaim and an event that says why; explain pod says the same, in Karpenter's words,
    rather than the NodeOverlay DRA proposal's prediction (docs/kubernetes/nodeoverlay.md §8)."""
    plane, _ = karpenter
    sid = "dra-pod"
    the_pod = pod({"cpu": "1"})
    the_pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": sid}]
    the_pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    objects = [("/apis/resource.k8s.io/v1/deviceclasses",
                {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": sid},
                 "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}),
               ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": sid, "namespace": "default"},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": sid}}]}}})]
    with _pending(plane, dra, tmp_path, (sid, [pool("p")], [], the_pod), objects) as (world, pools, predicted):
        assert predicted["nodePool"] is None and predicted["nodePools"] == [], predicted
        assert predicted["message"].endswith(KARPENTER_SKIPS_DRA) and predicted["assumptions"], predicted
        event = wait_for("Karpenter's event on the pod", lambda: _karpenter_gave_up(plane, sid), timeout=90)
        assert event == KARPENTER_SKIPS_DRA
        assert world.node_claims(pools) == []
