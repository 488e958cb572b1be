"""Extended resources backed by DRA (KEP-5004) against the real kube-scheduler v1.37.2.

Each scenario has its own resource name, DeviceClass, driver and nodes (labelled with the scenario,
and its pods select that label), so one never changes another's answer; every other node of the
shared cluster is refused by NodeAffinity, which the message counts too. For every pod the
explainer reads the live cluster and explains the pod as the server would create it; then the pod
is created and the scheduler decides:
- refused: the explainer's message equals the scheduler's (up to " preemption:") character for
  character;
- bound: the explainer fits it on that node, and the claim the scheduler created (its requests)
  and the pod's ``status.extendedResourceClaimStatus`` (its mappings) equal what
  kubectl_dra/scheduling/extended.py predicted for that node.
Then ``claims``, ``explain claim`` and ``devices`` read the scheduler's claims.
"""

from __future__ import annotations

import urllib.error
from dataclasses import dataclass, field

import pytest
import yaml
from clusterobjects import ready_node, scheduled_false, settle, wait_for
from loader import load
from test_pending_oracle import explain_before, up_to_preemption

from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import DeviceClass
from kubectl_dra.scheduling.extended import extended_demand, node_scalars, on_node

NAMESPACE = "extended-oracle"
LABEL = "extended-oracle"
IMAGE = "registry.example/app:1"


def res(scenario: str) -> str:
    return f"{scenario}.ext.example/gpu"


def drv(scenario: str, suffix: str = "") -> str:
    return f"{scenario}{suffix}.ext.example.com"


def node(scenario: str, i: int = 0, **allocatable: str) -> dict:
    out = ready_node(f"ext-{scenario}-{i}", {"cpu": "8", "memory": "16Gi", "pods": "110", **allocatable})
    out["metadata"]["labels"][LABEL] = scenario
    return out


def slice_(scenario: str, n: int, i: int = 0, *, suffix: str = "", taint: str | None = None) -> dict:
    devices = [{"name": f"g{j}", **({"taints": [{"key": "broken", "effect": taint}]} if taint else {})}
               for j in range(n)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"ext-{scenario}{suffix}-{i}"},
            "spec": {"driver": drv(scenario, suffix), "nodeName": f"ext-{scenario}-{i}",
                     "pool": {"name": f"ext-{scenario}-{i}", "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def klass(scenario: str, *, name: str | None = None, resource: str | None = "default", suffix: str = "") -> dict:
    spec: dict = {"selectors": [{"cel": {"expression": f'device.driver == "{drv(scenario, suffix)}"'}}]}
    if resource:
        spec["extendedResourceName"] = res(scenario) if resource == "default" else resource
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name or f"ext-{scenario}"}, "spec": spec}


def c(name: str, restart: str | None = None, **requests: str) -> dict:
    """A container; extended resources cannot be overcommitted, so their limits equal the requests."""
    limits = {k: v for k, v in requests.items() if "/" in k}
    out = {"name": name, "image": IMAGE, "resources": {"requests": {"cpu": "10m", **requests}, "limits": limits}}
    if restart:
        out["restartPolicy"] = restart
    return out


def pod(scenario: str, name: str, *containers: dict, init: tuple = (), node_name: str | None = None,
        claims: list | None = None) -> dict:
    spec: dict = {"containers": list(containers), "initContainers": list(init),
                  "nodeSelector": {LABEL: scenario}, "terminationGracePeriodSeconds": 0}
    if node_name:
        spec["nodeName"] = node_name
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{scenario}-{name}", "namespace": NAMESPACE},
            "spec": spec}


@dataclass
class Scenario:
    name: str
    objects: list[dict]  # nodes, slices, classes, templates
    ask: dict  # the pod whose scheduling is compared
    setup: list[dict] = field(default_factory=list)  # pods placed before it (bound by the scheduler or by nodeName)
    expect: str = "refused"  # or the node it must be bound to ("any": one of the scenario's)


def gpu(scenario: str, n: str) -> dict:
    return {res(scenario): n}


def scenarios() -> list[Scenario]:
    out = []
    s = "bound"  # the plain case: one container, one device, a node with two
    out.append(Scenario(s, [node(s), slice_(s, 2), klass(s)], pod(s, "ask", c("a", **gpu(s, "1"))),
                        expect=f"ext-{s}-0"))
    s = "taken"  # the case: the DRA node's device is held, the device-plugin node is full
    out.append(Scenario(s, [node(s, 0), slice_(s, 1, 0), node(s, 1, **gpu(s, "1")), klass(s)],
                        pod(s, "ask", c("a", **gpu(s, "1"))),
                        setup=[pod(s, "holder", c("a", **gpu(s, "1")), node_name=f"ext-{s}-1"),
                               pod(s, "first", c("a", **gpu(s, "1")))]))
    s = "units"  # a request of several units: one request for three devices
    out.append(Scenario(s, [node(s), slice_(s, 3), klass(s)], pod(s, "ask", c("a", **gpu(s, "3"))), expect="any"))
    s = "toomany"  # more units than the node has devices
    out.append(Scenario(s, [node(s), slice_(s, 2), klass(s)], pod(s, "ask", c("a", **gpu(s, "3")))))
    s = "init"  # an init container asking more than the regular one: it takes the rest
    out.append(Scenario(s, [node(s), slice_(s, 3), klass(s)],
                        pod(s, "ask", c("main", **gpu(s, "1")), init=(c("setup", **gpu(s, "3")),)), expect="any"))
    s = "sidecar"  # a sidecar is long-lived; the init container before it reuses its devices
    out.append(Scenario(s, [node(s), slice_(s, 3), klass(s)],
                        pod(s, "ask", c("main", **{"memory": "64Mi", **gpu(s, "1")}),
                            init=(c("setup", **gpu(s, "1")), c("side", "Always", **gpu(s, "1")))), expect="any"))
    s = "bothways"  # a node that advertises the name and has slices: only its allocatable counts
    out.append(Scenario(s, [node(s, **gpu(s, "1")), slice_(s, 4), klass(s)], pod(s, "ask", c("a", **gpu(s, "2")))))
    s = "implicit"  # the class's implicit name, deviceclass.resource.kubernetes.io/<class>
    out.append(Scenario(s, [node(s), slice_(s, 1), klass(s, resource=None)],
                        pod(s, "ask", c("a", **{f"deviceclass.resource.kubernetes.io/ext-{s}": "1"})), expect="any"))
    s = "clash"  # two classes name the resource: the newest (then the lowest name) provides it
    out.append(Scenario(s, [node(s, 0), node(s, 1), slice_(s, 1, 0, suffix="a"), slice_(s, 1, 1, suffix="b"),
                            klass(s, name=f"ext-{s}-a", suffix="a"), klass(s, name=f"ext-{s}-b", suffix="b")],
                        pod(s, "ask", c("a", **gpu(s, "1"))), expect="any"))
    s = "tainted"  # a NoSchedule taint on the only device
    out.append(Scenario(s, [node(s), slice_(s, 1, taint="NoSchedule"), klass(s)],
                        pod(s, "ask", c("a", **gpu(s, "1")))))
    s = "noclass"  # no class names the resource: NodeResourcesFit alone refuses
    out.append(Scenario(s, [node(s), slice_(s, 1), klass(s, resource=None)], pod(s, "ask", c("a", **gpu(s, "1")))))
    s = "withclaim"  # a claim of the user's and the scheduler's claim share the node's two devices
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"ext-{s}", "namespace": NAMESPACE},
                "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": f"ext-{s}"}}]}}}}
    out.append(Scenario(s, [node(s), slice_(s, 2), klass(s), template],
                        pod(s, "ask", {**c("a", **gpu(s, "1")), "resources": {
                            "requests": {"cpu": "10m", **gpu(s, "1")}, "limits": gpu(s, "1"),
                            "claims": [{"name": "mine"}]}},
                            claims=[{"name": "mine", "resourceClaimTemplateName": f"ext-{s}"}]), expect="any"))
    s = "withclaimfull"  # the same with one device: both cannot be allocated together
    template = {**template, "metadata": {"name": f"ext-{s}", "namespace": NAMESPACE},
                "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": f"ext-{s}"}}]}}}}
    out.append(Scenario(s, [node(s), slice_(s, 1), klass(s), template],
                        pod(s, "ask", {**c("a", **gpu(s, "1")), "resources": {
                            "requests": {"cpu": "10m", **gpu(s, "1")}, "limits": gpu(s, "1"),
                            "claims": [{"name": "mine"}]}},
                            claims=[{"name": "mine", "resourceClaimTemplateName": f"ext-{s}"}])))
    # a claim of the user's, and the resource from the node's allocatable: PreBind fails
    # (docs/kubernetes/extended-resources.md §4)
    s = "claimdp"
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"ext-{s}", "namespace": NAMESPACE},
                "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
                    "deviceClassName": f"ext-{s}-user"}}]}}}}
    user_class = klass(s, name=f"ext-{s}-user", resource=None)
    out.append(Scenario(s, [node(s, **gpu(s, "1")), slice_(s, 1), klass(s, suffix="none"), user_class, template],
                        pod(s, "ask", {**c("a", **gpu(s, "1")), "resources": {
                            "requests": {"cpu": "10m", **gpu(s, "1")}, "limits": gpu(s, "1"),
                            "claims": [{"name": "mine"}]}},
                            claims=[{"name": "mine", "resourceClaimTemplateName": f"ext-{s}"}]), expect="prebind"))
    s = "evict"  # bound, then a NoExecute DeviceTaintRule on its devices (test_a_noexecute_taint_evicts_the_pod)
    out.append(Scenario(s, [node(s), slice_(s, 1), klass(s)], pod(s, "ask", c("a", **gpu(s, "1"))), expect="any"))
    return out


SCENARIOS = scenarios()


def _claims(plane) -> list[dict]:
    return plane.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims")["items"]


def _extended_claim(plane, pod: dict) -> dict | None:
    uid = pod["metadata"]["uid"]
    return next((c for c in _claims(plane)
                 if c["metadata"].get("annotations", {}).get("resource.kubernetes.io/extended-resource-claim") == "true"
                 and any(r["uid"] == uid for r in c["metadata"].get("ownerReferences", []))), None)


@pytest.fixture(scope="module")
def oracle(full_cluster, tmp_path_factory):
    plane = full_cluster
    load(plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    for s in SCENARIOS:  # one by one: the clash's two classes must be created in this order
        load(plane, s.objects)
    setup = [(s, p) for s in SCENARIOS for p in s.setup]
    for s, p in setup:
        load(plane, [p])
        got = settle(plane, NAMESPACE, p["metadata"]["name"]) if not p["spec"].get("nodeName") else None
        assert got is None or got["spec"].get("nodeName"), (s.name, got and got["status"])
    kubeconfig = str(plane.kubeconfig(tmp_path_factory.mktemp("extended") / "kubeconfig", namespace=NAMESPACE))
    results = {s.name: {"mine": explain_before(plane, kubeconfig, s.ask)} for s in SCENARIOS}
    for s in SCENARIOS:
        load(plane, [s.ask])
    for s in SCENARIOS:
        got = settle(plane, NAMESPACE, s.ask["metadata"]["name"])
        results[s.name]["pod"] = got
    yield plane, kubeconfig, results
    for s in SCENARIOS:  # cluster-wide objects go with the module (nodes, slices, classes)
        for o in s.objects:
            if o["kind"] in ("Node", "ResourceSlice", "DeviceClass"):
                plural = {"Node": "/api/v1/nodes", "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
                          "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses"}[o["kind"]]
                plane.request("DELETE", f"{plural}/{o['metadata']['name']}")
    plane.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_explainer_decides_as_the_scheduler(oracle, scenario):
    plane, _, results = oracle
    mine, got = results[scenario.name]["mine"], results[scenario.name]["pod"]
    where = got["spec"].get("nodeName")
    if scenario.expect == "prebind":
        assert not where, f"bound to {where}"
        condition = scheduled_false(got)
        assert condition["reason"] == "SchedulerError", condition
        assert mine.message is None  # every filter passes: the failure comes after them
        assert mine.feasible_nodes == [f"ext-{scenario.name}-0"]
        assert mine.bind_errors == {f"ext-{scenario.name}-0": condition["message"]}
        return
    if scenario.expect == "refused":
        assert not where, f"bound to {where}"
        condition = scheduled_false(got)
        assert condition["reason"] == "Unschedulable", condition
        assert mine.message == up_to_preemption(condition["message"])
        return
    assert where, scheduled_false(got)
    if scenario.expect != "any":
        assert where == scenario.expect
    assert mine.message is None
    verdict = {n.node: n for n in mine.nodes}[where]
    assert verdict.fits, (verdict.reasons, verdict.undetermined)
    # the claim the scheduler made for the pod, and the mappings in the pod's status
    claim = wait_for("the pod's extended-resource claim", lambda: _extended_claim(plane, got))
    status = wait_for("the pod's extendedResourceClaimStatus", lambda: plane.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{got['metadata']['name']}")["status"].get(
        "extendedResourceClaimStatus"))
    assert status["resourceClaimName"] == claim["metadata"]["name"]
    assert claim["metadata"]["name"].startswith(f"{got['metadata']['name']}-extended-resources-")
    predicted = _prediction(plane, got, where)
    theirs = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
              for r in claim["spec"]["devices"]["requests"]]
    assert theirs == [(r.name, r.device_class_name, r.count) for r in predicted.requests]
    assert [(m["containerName"], m["resourceName"], m["requestName"]) for m in status["requestMappings"]] == \
        [(m.container_name, m.resource_name, m.request_name) for m in predicted.mappings]
    assert claim["status"]["allocation"]["devices"]["results"], claim["status"]
    assert [r["uid"] for r in claim["status"].get("reservedFor", [])] == [got["metadata"]["uid"]]


def _prediction(plane, got: dict, where: str):
    pod = parse_object(got)
    classes = [DeviceClass.from_raw({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **o})
               for o in plane.request("GET", "/apis/resource.k8s.io/v1/deviceclasses")["items"]]
    node = parse_object({"apiVersion": "v1", "kind": "Node", **plane.request("GET", f"/api/v1/nodes/{where}")})
    demand = extended_demand(pod, classes, [])
    return on_node(demand, node_scalars(node))


def test_enough_scenarios_of_each_outcome():
    refused = [s for s in SCENARIOS if s.expect == "refused"]
    assert len(SCENARIOS) >= 10 and len(refused) >= 5 and len(SCENARIOS) - len(refused) >= 5


def test_the_clash_goes_to_the_newest_class(oracle):
    plane, _, results = oracle
    got = results["clash"]["pod"]
    claim = _extended_claim(plane, got)
    classes = {k["metadata"]["name"]: k["metadata"]["creationTimestamp"]
               for k in plane.request("GET", "/apis/resource.k8s.io/v1/deviceclasses")["items"]
               if k["metadata"]["name"].startswith("ext-clash-")}
    newest = max(classes, key=lambda n: (classes[n], [-ord(ch) for ch in n]))
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == newest, classes


def test_a_noexecute_taint_evicts_the_pod(oracle, dra, tmp_path):
    """The device taint eviction controller reads the claim in ``status.extendedResourceClaimStatus``
    (``resourceclaim.PodClaims``, kubernetes/kubernetes#141290); the scheduler's claim has no
    tolerations, so nothing the pod says can keep it."""
    plane, kubeconfig, results = oracle
    name = results["evict"]["pod"]["metadata"]["name"]
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "ext-evict"},
            "spec": {"deviceSelector": {"driver": drv("evict")},
                     "taint": {"key": "example.com/broken", "effect": "NoExecute"}}}
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(rule))
    dry = dra("taints", "--dry-run", "-f", str(path), "--kubeconfig", kubeconfig, "-o", "json")
    assert dry.exit_code == 1, dry
    outcomes = {(c["outcome"], tuple(c["pods"])) for d in dry.json()["devices"] for c in d["consumers"]}
    assert outcomes == {("WouldEvict", (f"{NAMESPACE}/{name}",))}
    plane.request("POST", "/apis/resource.k8s.io/v1/devicetaintrules", rule)
    try:
        wait_for("the controller to evict the pod", lambda: _gone_or_deleting(plane, name), timeout=60)
    finally:
        plane.request("DELETE", "/apis/resource.k8s.io/v1/devicetaintrules/ext-evict")


def _gone_or_deleting(plane, name: str) -> bool:
    try:
        got = plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
    except urllib.error.HTTPError as exc:
        return exc.code == 404
    return bool(got["metadata"].get("deletionTimestamp"))


def test_claims_and_devices_read_the_schedulers_claims(oracle, dra):
    plane, kubeconfig, results = oracle
    got = results["bound"]["pod"]
    claim = _extended_claim(plane, got)
    name = claim["metadata"]["name"]
    listed = dra("claims", "--kubeconfig", kubeconfig, "-n", NAMESPACE, "-o", "json")
    assert listed.exit_code in (0, 1), listed
    row = next(c for c in listed.json()["items"] if c["name"] == name)
    assert row["pods"] == [got["metadata"]["name"]] and row["reservedFor"] == [f"pod/{got['metadata']['name']}"]
    explained = dra("explain", "claim", name, "--kubeconfig", kubeconfig, "-n", NAMESPACE, "-o", "json")
    assert explained.exit_code == 0, explained
    doc = explained.json()
    assert [(c["pod"], c["via"], c["reserved"]) for c in doc["consumers"]] == [
        (f"{NAMESPACE}/{got['metadata']['name']}", "extendedResource", True)]
    devices = dra("devices", "--kubeconfig", kubeconfig, "--node", "ext-bound-0", "-o", "json")
    assert devices.exit_code == 0, devices
    pool = devices.json()["pools"][0]
    assert (pool["total"], pool["allocated"], pool["free"]) == (2, 1, 1)
