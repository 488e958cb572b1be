"""`kubectl dra` against the real API server: what it reads and how (from the server's audit log),
namespaces, selectors, RBAC refusals, bad credentials, impersonation, and the claim scenarios of
tests/e2e/test_claim_scenarios.py (each in its own namespace and pool) through the live path."""

from __future__ import annotations

import sys
import urllib.parse
from pathlib import Path

import pytest
from builders import small_cluster
from controlplane import ADMIN_TOKEN, started
from loader import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import test_claim_scenarios as scenarios  # noqa: E402

ADMIN = "kubectl-dra-admin"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    plane = started(tmp_path_factory.mktemp("live-plane"))
    try:
        load(plane, small_cluster())
        kubeconfig = plane.kubeconfig(tmp_path_factory.mktemp("live") / "kubeconfig", namespace="ml")
        yield plane, str(kubeconfig)
    finally:
        plane.stop()


def paths(events) -> list[str]:
    return [urllib.parse.urlsplit(e["requestURI"]).path for e in events]


def query(event) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(event["requestURI"]).query))


def test_claims_all_namespaces_one_list_call_per_kind(live, dra):
    plane, kubeconfig = live
    mark = plane.audit_mark()
    result = dra("claims", "-A", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "STATE", "NODE", "DEVICES", "AGE"]  # RESERVED-FOR: -o wide
    rows = {line.split()[1]: line.split() for line in lines[1:]}
    assert rows["trainer-gpus"][:5] == ["ml", "trainer-gpus", "allocated,reserved", "worker-1", "gpu-0,gpu-1"]
    assert rows["web-gpu-k2x9z"][0] == "default"
    assert rows["spare"][2:5] == ["pending", "<none>", "<none>"]
    events = plane.requests_since(mark, ADMIN)
    assert [e["verb"] for e in events] == ["list"], "one list, no per-object GET; the plain table needs no pods"
    assert paths(events) == ["/apis/resource.k8s.io/v1/resourceclaims"]
    assert all(query(e)["limit"] == "500" for e in events)


def test_namespace_from_context_and_flag_before_command(live, dra):
    plane, kubeconfig = live
    mark = plane.audit_mark()
    result = dra("--kubeconfig", kubeconfig, "claims", "-o", "name")
    assert result.exit_code == 0, result
    assert result.stdout.splitlines() == ["resourceclaim.resource.k8s.io/spare",
                                          "resourceclaim.resource.k8s.io/trainer-gpus"]
    assert set(paths(plane.requests_since(mark, ADMIN))) == {"/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims"}
    wide = plane.audit_mark()
    assert dra("--kubeconfig", kubeconfig, "claims", "-o", "wide").exit_code == 0
    assert set(paths(plane.requests_since(wide, ADMIN))) == {
        "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims", "/api/v1/namespaces/ml/pods",
        "/apis/resource.k8s.io/v1/resourceslices", "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups"}
    result = dra("claims", "--kubeconfig", kubeconfig, "-n", "default", "--no-headers")
    assert result.stdout.split()[:2] == ["web-gpu-k2x9z", "allocated,reserved"]


def test_label_selector_is_sent_to_the_server(live, dra):
    plane, kubeconfig = live
    mark = plane.audit_mark()
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-l", "team=research", "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert [i["name"] for i in doc["items"]] == ["trainer-gpus"]
    assert doc["items"][0]["reservedFor"] == ["podgroup/trainer"]
    assert doc["items"][0]["pods"] == ["trainer-0", "trainer-1"]
    [claims] = [e for e in plane.requests_since(mark, ADMIN) if e["objectRef"]["resource"] == "resourceclaims"]
    assert query(claims)["labelSelector"] == "team=research"


def test_forbidden_kind_gives_partial_result_and_names_the_permission(live, dra, tmp_path):
    """A real RBAC refusal: a user who may list claims but not pods."""
    plane, _ = live
    plane.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "claims-only"}})
    plane.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "claims-only"},
        "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["list"]}]})
    plane.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "claims-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "claims-only"},
        "subjects": [{"kind": "ServiceAccount", "name": "claims-only", "namespace": "default"}]})
    token = plane.service_account_token("default", "claims-only")
    kubeconfig = str(plane.kubeconfig(tmp_path / "limited", token=token, user="claims-only"))
    plain = dra("claims", "--kubeconfig", kubeconfig, "-A")
    assert plain.exit_code == 0 and plain.stderr == "", "the plain table needs no pods"
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-o", "wide")
    assert result.exit_code == 4, result
    assert "trainer-gpus" in result.stdout  # claims are still listed
    assert "cannot list pods" in result.stderr and "forbidden" in result.stderr
    assert 'User "system:serviceaccount:default:claims-only" cannot list resource "pods"' in result.stderr
    assert "Traceback" not in result.stderr


def test_forbidden_reports_are_not_a_missing_agent(example_cluster, dra):
    """verify without permission to list reports: say so, not "is dra-node-agent deployed?"."""
    _, kubeconfig = example_cluster
    result = dra("verify", "-A", "--kubeconfig", kubeconfig, "--as", "alice")
    assert result.exit_code == 3 and result.stdout == ""
    assert 'User "alice" cannot list resource "nodeenforcementreports"' in result.stderr
    assert "deployed" not in result.stderr
    assert result.stderr.splitlines()[-1] == "error: no NodeEnforcementReport could be read (see the errors above)"


def test_without_the_report_crd_the_agent_is_not_deployed(live, dra):
    _, kubeconfig = live  # this cluster has no kubectl-dra CRD
    result = dra("verify", "-A", "--kubeconfig", kubeconfig)
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "error: this cluster has no NodeEnforcementReport API (its CRD is not installed): dra-node-agent is not "
        "deployed (kubectl apply -k manifests/), or use --cgroup-root on a node")


def test_a_node_that_does_not_exist_is_not_found(live, dra):
    plane, kubeconfig = live
    for args in (["explain", "node", "worker-9"], ["verify", "--node", "worker-9"]):
        result = dra(*args, "--kubeconfig", kubeconfig)
        assert result.exit_code == 3, (args, result)
        assert result.stderr.splitlines()[-1] == 'error: node "worker-9" not found', args


def test_unauthorized_is_one_clear_line(live, dra, tmp_path):
    plane, _ = live
    kubeconfig = str(plane.kubeconfig(tmp_path / "bad", token="not-a-token"))
    result = dra("claims", "--kubeconfig", kubeconfig)
    assert result.exit_code == 3
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: ")
    assert "401" in result.stderr or "Unauthorized" in result.stderr or "credentials" in result.stderr


def test_impersonation_reaches_the_server(live, dra):
    plane, kubeconfig = live
    mark = plane.audit_mark()
    result = dra("claims", "--kubeconfig", kubeconfig, "--as", "alice", "--as-group", "sre", "--as-group", "oncall")
    assert 'User "alice" cannot list resource "resourceclaims"' in result.stderr  # alice may read nothing here
    assert result.exit_code == 3 and result.stdout == "", "nothing could be read: not an empty (partial) list"
    assert result.stderr.splitlines()[-1] == "error: nothing to show: ResourceClaim objects could not be read (see above)"
    impersonated = [e for e in plane.requests_since(mark) if e.get("impersonatedUser")]
    assert impersonated and all(e["user"]["username"] == ADMIN for e in impersonated)
    assert impersonated[0]["impersonatedUser"]["username"] == "alice"
    assert impersonated[0]["impersonatedUser"]["groups"][:2] == ["sre", "oncall"]


def test_explain_claim_live_reads_each_kind_once(live, dra):
    plane, kubeconfig = live
    group = plane.request("GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/trainer")
    mark = plane.audit_mark()
    result = dra("explain", "claim", "trainer-gpus", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert doc["claim"]["state"] == ["allocated", "reserved"]
    assert [d["device"] for d in doc["devices"]] == ["gpu-0", "gpu-1"]
    assert doc["devices"][0]["attributes"] == {"model": "LATEST-GPU-MODEL"}
    assert doc["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "trainer",
                                   "uid": group["metadata"]["uid"], "resolved": "exists",
                                   "pods": ["ml/trainer-0", "ml/trainer-1"], "node": None, "deleting": False}]
    assert [(c["pod"], c["reserved"]) for c in doc["consumers"]] == [("ml/trainer-0", True), ("ml/trainer-1", True)]
    events = plane.requests_since(mark, ADMIN)
    counts: dict[str, int] = {}
    for e in events:
        counts[e["objectRef"]["resource"]] = counts.get(e["objectRef"]["resource"], 0) + 1
    assert counts == {"resourceclaims": 1, "pods": 1, "resourceslices": 1, "deviceclasses": 1, "podgroups": 1,
                      "devicetaintrules": 1}  # (the rules that may taint its devices)
    assert all(e["verb"] == "list" for e in events)
    [claims] = [e for e in events if e["objectRef"]["resource"] == "resourceclaims"]
    assert query(claims)["fieldSelector"] == "metadata.name=trainer-gpus"
    [slices] = [e for e in events if e["objectRef"]["resource"] == "resourceslices"]
    # only the pool its devices came from, not every slice in the cluster
    assert query(slices)["fieldSelector"] == "spec.driver=gpu.example.com,spec.pool.name=worker-1"


def test_explain_missing_claim(live, dra):
    _, kubeconfig = live
    result = dra("explain", "claim", "nope", "--kubeconfig", kubeconfig)
    assert result.exit_code == 3
    assert result.stderr.strip() == 'error: resourceclaim "nope" not found in namespace ml'


# ---- the claim scenarios through the live path ---------------------------------------------------

def isolated(objects: list[dict], index: int, generation: str) -> tuple[list[dict], str]:
    """One scenario's objects in a namespace, node and pool of their own (names are shared)."""
    import json

    namespace, node = f"scenario-{index}", f"worker-s{index}"
    text = json.dumps(objects).replace('"worker-1"', f'"{node}"')
    out = json.loads(text)
    for obj in out:
        if obj["metadata"].get("namespace"):
            obj["metadata"]["namespace"] = namespace
        if obj["kind"] == "ResourceSlice":
            obj["metadata"]["name"] = f"{node}-{obj['spec']['driver']}"
    if generation == "v1beta1":  # resource.k8s.io/v1beta1, which 1.37 still serves beside its PodGroup v1beta1
        out = [scenarios.to_v1beta1(o) if o["kind"] != "PodGroup" else o for o in out]
    node_object = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
                   "status": {"declaredFeatures": ["DRANodeAllocatableResources"],
                              "nodeInfo": {"kubeletVersion": "v1.37.2"}}}
    return [node_object, *out], namespace


@pytest.mark.parametrize("generation", ["v1", "v1beta1"])
@pytest.mark.parametrize("case", range(len(scenarios.CASES)), ids=[c[0] for c in scenarios.CASES])
def test_claim_scenarios_live(live, dra, tmp_path, case, generation):
    plane, _ = live
    name, build, expected = scenarios.CASES[case]
    index = case * 2 + (generation == "v1beta1")
    objects, namespace = isolated(build(), index, generation)
    for klass in [o for o in objects if o["kind"] == "DeviceClass"]:  # cluster-scoped, shared by scenarios
        objects.remove(klass)
        names = {c["metadata"]["name"] for c in plane.request("GET", "/apis/resource.k8s.io/v1/deviceclasses")["items"]}
        if klass["metadata"]["name"] not in names:
            load(plane, [klass])
    load(plane, objects)
    kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig", namespace=namespace, token=ADMIN_TOKEN))
    claim_name = scenarios.CLAIM_NAME.get(name.removesuffix("-healthy-twin"), "c")
    result = dra("explain", "claim", claim_name, "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    assert sorted({f["code"] for f in result.json()["findings"]}) == expected
