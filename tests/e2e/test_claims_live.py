"""``kubectl dra claims`` and ``explain claim`` against a local API server, through the real client."""

from __future__ import annotations

import socket

import pytest
from builders import claim, pod, pod_group, reserved_group, reserved_pod, resource_slice, uid

GPU = "gpu.example.com"


def small_cluster() -> list[dict]:
    trainer0 = pod("trainer-0", group="trainer", claims={"gpus": "trainer-gpus"})
    trainer1 = pod("trainer-1", group="trainer", claims={"gpus": "trainer-gpus"})
    web = pod("web", "default", generated={"gpu": "web-gpu-k2x9z"}, templates={"gpu": "single-gpu"})
    return [
        trainer0, trainer1, web, pod_group("trainer"),
        claim("trainer-gpus", devices=[(GPU, "worker-1", "gpu-0"), (GPU, "worker-1", "gpu-1")],
              reserved_for=[reserved_group("trainer")], labels={"team": "research"}),
        claim("web-gpu-k2x9z", "default", devices=[(GPU, "worker-1", "gpu-2")], reserved_for=[reserved_pod(web)]),
        claim("spare", devices=(), node=None),
        resource_slice("worker-1", GPU, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]),
    ]


@pytest.fixture
def cluster(make_apiserver, kubeconfig_for):
    server = make_apiserver(small_cluster())
    return server, str(kubeconfig_for(server, namespace="ml"))


def test_claims_all_namespaces_one_list_call_per_kind(cluster, dra):
    server, kubeconfig = cluster
    result = dra("claims", "-A", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "STATE", "NODE", "DEVICES", "RESERVED-FOR", "AGE"]
    rows = {line.split()[1]: line.split() for line in lines[1:]}
    assert rows["trainer-gpus"] == ["ml", "trainer-gpus", "allocated,reserved", "worker-1", "gpu-0,gpu-1",
                                    "podgroup/trainer", "2d4h"]
    assert rows["web-gpu-k2x9z"][0] == "default"
    assert rows["spare"][2:6] == ["pending", "<none>", "<none>", "<none>"]
    lists = server.list_requests()
    assert sorted(r.resource for r in lists) == ["pods", "resourceclaims"]
    assert all(r.path in ("/apis/resource.k8s.io/v1/resourceclaims", "/api/v1/pods") for r in lists)
    assert all(r.query.get("limit") == "500" for r in lists)
    singles = [r for r in server.requests if r.method == "GET" and not r.is_list and r.path.rstrip("/") != "/apis"]
    assert singles == [], "no per-object GETs"


def test_namespace_from_context_and_flag_before_command(cluster, dra):
    server, kubeconfig = cluster
    result = dra("--kubeconfig", kubeconfig, "claims", "-o", "name")
    assert result.exit_code == 0, result
    assert result.stdout.splitlines() == ["resourceclaim.resource.k8s.io/spare",
                                          "resourceclaim.resource.k8s.io/trainer-gpus"]
    assert {r.path for r in server.list_requests()} == {"/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims",
                                                         "/api/v1/namespaces/ml/pods"}
    result = dra("claims", "--kubeconfig", kubeconfig, "-n", "default", "--no-headers")
    assert result.stdout.split()[:2] == ["web-gpu-k2x9z", "allocated,reserved"]


def test_label_selector_is_sent_to_the_server(cluster, dra):
    server, kubeconfig = cluster
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-l", "team=research", "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert (doc["apiVersion"], doc["kind"]) == ("kubectl-dra.io/v1alpha1", "ClaimList")
    assert [i["name"] for i in doc["items"]] == ["trainer-gpus"]
    assert doc["items"][0]["reservedFor"] == ["podgroup/trainer"]
    assert doc["items"][0]["pods"] == ["trainer-0", "trainer-1"]
    claim_lists = server.list_requests("resourceclaims")
    assert claim_lists[0].query["labelSelector"] == "team=research"


def test_pagination_follows_continue_and_restarts_after_410(make_apiserver, kubeconfig_for, dra):
    objects = [claim(f"c-{i:04d}", devices=()) for i in range(1203)]
    server = make_apiserver(objects)
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    server.expire_continue_tokens(times=1)
    result = dra("claims", "--kubeconfig", kubeconfig, "-o", "name")
    assert result.exit_code == 0, result
    assert len(result.stdout.splitlines()) == 1203
    pages = server.list_requests("resourceclaims")
    # first attempt: page 1 ok, page 2 gets 410 -> restart: 3 pages
    assert [("continue" in r.query) for r in pages] == [False, True, False, True, True]


def test_forbidden_kind_gives_partial_result_and_names_the_permission(cluster, dra):
    server, kubeconfig = cluster
    server.fail(403, resource="pods")
    result = dra("claims", "--kubeconfig", kubeconfig, "-A")
    assert result.exit_code == 4, result
    assert "trainer-gpus" in result.stdout  # claims are still listed
    assert "cannot list pods" in result.stderr and "forbidden" in result.stderr
    assert "Traceback" not in result.stderr


def test_server_errors_are_retried(cluster, dra):
    server, kubeconfig = cluster
    server.fail(500, resource="resourceclaims", times=2)
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-o", "name")
    assert result.exit_code == 0, result
    assert len(result.stdout.splitlines()) == 3
    assert len(server.list_requests("resourceclaims")) == 3


def test_unauthorized_is_one_clear_line(cluster, dra):
    server, kubeconfig = cluster
    server.fail(401, resource=None)
    result = dra("claims", "--kubeconfig", kubeconfig)
    assert result.exit_code == 3
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: ")


def test_unreachable_server(tmp_path, dra):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = dra("claims", "--server", f"http://127.0.0.1:{port}", "--request-timeout", "2s")
    assert result.exit_code == 3
    assert result.stderr.strip() == f"error: cannot reach the API server at http://127.0.0.1:{port}: connection refused"


def test_missing_kubeconfig_file(tmp_path, dra):
    result = dra("claims", "--kubeconfig", str(tmp_path / "nope"))
    assert result.exit_code == 3
    assert "nope" in result.stderr and "Traceback" not in result.stderr


def test_dra_api_not_served(make_apiserver, kubeconfig_for, dra):
    server = make_apiserver([pod("p")], served={"resource.k8s.io": []})
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server)), "-A")
    assert result.exit_code == 4
    assert "resource.k8s.io is not served" in result.stderr


def test_older_api_generation_is_discovered(make_apiserver, kubeconfig_for, dra):
    old = claim("old", devices=[(GPU, "worker-1", "gpu-0")])
    old["apiVersion"] = "resource.k8s.io/v1beta1"
    old["spec"] = {"devices": {"requests": [{"name": "req", "deviceClassName": GPU, "count": 1}]}}
    server = make_apiserver([old], served={"resource.k8s.io": ["v1beta1"]})
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server, namespace="ml")), "-o", "json")
    assert result.exit_code == 0, result
    assert result.json()["items"][0]["devices"] == [f"{GPU}/worker-1/gpu-0"]
    assert server.list_requests("resourceclaims")[0].path == "/apis/resource.k8s.io/v1beta1/namespaces/ml/resourceclaims"


def test_impersonation_reaches_the_server(cluster, dra):
    server, kubeconfig = cluster
    dra("claims", "--kubeconfig", kubeconfig, "--as", "alice", "--as-group", "sre", "--as-group", "oncall")
    request = server.list_requests("resourceclaims")[0]
    assert request.headers["Impersonate-User"] == "alice"
    assert request.headers.get_all("Impersonate-Group") == ["sre", "oncall"]


def test_explain_claim_live_reads_each_kind_once(cluster, dra):
    server, kubeconfig = cluster
    result = dra("explain", "claim", "trainer-gpus", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert doc["kind"] == "ClaimExplanation"
    assert doc["claim"]["state"] == ["allocated", "reserved"]
    assert [d["device"] for d in doc["devices"]] == ["gpu-0", "gpu-1"]
    assert doc["devices"][0]["attributes"] == {"model": "LATEST-GPU-MODEL"}
    assert doc["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "trainer",
                                   "uid": uid("pg/trainer"), "resolved": "exists",
                                   "pods": ["ml/trainer-0", "ml/trainer-1"], "node": None, "deleting": False}]
    assert [(c["pod"], c["reserved"]) for c in doc["consumers"]] == [("ml/trainer-0", True), ("ml/trainer-1", True)]
    counts = {}
    for r in server.list_requests():
        counts[r.resource] = counts.get(r.resource, 0) + 1
    assert counts == {"resourceclaims": 1, "pods": 1, "resourceslices": 1, "deviceclasses": 1, "podgroups": 1}
    assert server.list_requests("resourceclaims")[0].query["fieldSelector"] == "metadata.name=trainer-gpus"


def test_explain_missing_claim(cluster, dra):
    _, kubeconfig = cluster
    result = dra("explain", "claim", "nope", "--kubeconfig", kubeconfig)
    assert result.exit_code == 3
    assert result.stderr.strip() == 'error: resourceclaim "nope" not found in namespace ml'
