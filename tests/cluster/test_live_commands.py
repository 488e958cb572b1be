"""Commands against the real API server: one list per kind (the server's audit log), Karpenter
absent, an empty cluster, the snapshot round trip, and the agent's report object, Events, dedup
and endpoints."""

from __future__ import annotations

import urllib.parse
import urllib.request

import yaml
from httpget import get
from agentpods import NODE, NODE_OBJECT, node_pods
from cgroup_tree import build_tree, set_file
from controlplane import started
from loader import load
from test_real_objects import EXAMPLE, crds, raw_objects

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.registry import parse_object
from node_agent.service import Agent, AgentConfig

ADMIN = "kubectl-dra-admin"


def counts(events) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events:
        assert e["verb"] == "list", e["requestURI"]
        out[e["objectRef"]["resource"]] = out.get(e["objectRef"]["resource"], 0) + 1
    return out


def test_explain_pod_one_list_per_kind(example_cluster, dra):
    plane, kubeconfig = example_cluster
    mark = plane.audit_mark()
    result = dra("explain", "pod", "embedder", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    assert result.json()["cgroups"]["pod"]["files"]["memory.max"] == str(14 << 30)
    assert counts(plane.requests_since(mark, ADMIN)) == {"pods": 1, "resourceclaims": 1, "resourceslices": 1,
                                                         "nodes": 1, "devicetaintrules": 1}


def test_overlays_one_list_per_kind(example_cluster, dra, tmp_path):
    plane, kubeconfig = example_cluster
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text((EXAMPLE / "karpenter" / "instance-types.yaml").read_text())
    mark = plane.audit_mark()
    result = dra("overlays", "--kubeconfig", kubeconfig, "--catalog", str(catalog))
    assert result.exit_code == 0, result
    assert "10.49264->9.443376" in result.stdout
    assert counts(plane.requests_since(mark, ADMIN)) == {"nodeoverlays": 1, "nodepools": 1, "nodeclaims": 1,
                                                         "nodes": 1}


def test_without_karpenter_and_in_an_empty_cluster(tmp_path_factory, dra):
    plane = started(tmp_path_factory.mktemp("no-karpenter"))
    try:
        kubeconfig = str(plane.kubeconfig(tmp_path_factory.mktemp("k") / "kubeconfig"))
        empty = dra("claims", "-A", "--kubeconfig", kubeconfig)
        assert empty.exit_code == 0 and empty.stdout == ""
        assert empty.stderr.strip() == "No resources found in any namespace."
        load(plane, [o for o in raw_objects(EXAMPLE) if not o["apiVersion"].startswith(("karpenter.sh",
                                                                                          "kubectl-dra.io"))])
        overlays = dra("overlays", "--kubeconfig", kubeconfig)
        assert overlays.exit_code == 3 and overlays.stdout == ""
        assert "no NodeOverlays to explain" in overlays.stderr and "karpenter.sh is not served" in overlays.stderr
        node = dra("explain", "node", "worker-cpu-1", "--kubeconfig", kubeconfig, "-o", "json")
        assert node.exit_code == 0, node  # overlays are optional context for a node
        assert node.json()["overlays"] == [] and node.json()["requested"]["cpu"] == "10001m"
        assert "warning: cannot read NodeOverlay objects" in node.stderr
    finally:
        plane.stop()


def test_snapshot_round_trip(example_cluster, dra, tmp_path):
    plane, kubeconfig = example_cluster
    out = tmp_path / "bundle"
    mark = plane.audit_mark()
    result = dra("snapshot", "-o", str(out), "-A", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result
    events = plane.requests_since(mark, ADMIN)
    assert len(events) == len({e["objectRef"]["resource"] for e in events}), "one list call per kind"
    listed = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[1:]}
    assert (listed["ResourceClaim"], listed["Pod"], listed["ResourceSlice"], listed["NodeOverlay"]) == (
        "12", "15", "5", "3")  # the example: 12 claims, 15 pods (4 pending), 5 slices
    saved = yaml.safe_load((out / "resourceclaims.resource.k8s.io.yaml").read_text())
    live = plane.request("GET", "/apis/resource.k8s.io/v1/resourceclaims")
    assert sorted(i["metadata"]["uid"] for i in saved["items"]) == sorted(i["metadata"]["uid"] for i in live["items"])


def agent_setup(tmp_path_factory):
    """A fresh cluster with the report CRD, the agent's node and pods, and a tree for them."""
    plane = started(tmp_path_factory.mktemp("agent-plane"))
    load(plane, [c for c in crds() if c["metadata"]["name"].startswith("nodeenforcementreports")] +
         [p.raw for p in node_pods()] + [NODE_OBJECT])
    items = plane.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}")["items"]
    pods = [parse_object({"apiVersion": "v1", "kind": "Pod", **p}) for p in items]
    work = tmp_path_factory.mktemp("agent")
    dirs = build_tree(work, pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))  # the planted divergence
    kube = KubeOptions(kubeconfig=str(plane.kubeconfig(work / "kubeconfig")))
    return plane, Agent(AgentConfig(node=NODE, cgroup_root=str(work / "fs" / "cgroup"), listen="127.0.0.1:0",
                                    interval=0.2), kube), {p.name: p.uid for p in pods}


def test_agent_report_events_dedup_and_endpoints(tmp_path_factory):
    plane, agent, uids = agent_setup(tmp_path_factory)
    try:
        agent.connect()
        base = "http://127.0.0.1:%d" % agent.start_http().server_address[1]
        assert get(base + "/readyz")[0] == 503
        mark = plane.audit_mark()
        report = agent.scan_once()
        by_agent = plane.requests_since(mark, ADMIN)  # before the test's own reads below
        assert report.status.summary.diverged == 1
        stored = plane.request("GET", f"/apis/kubectl-dra.io/v1alpha1/nodeenforcementreports/{NODE}")
        assert stored["status"]["summary"] == {"pods": 4, "matched": 3, "diverged": 1, "unknown": 0, "claims": 0, "claimFindings": 0}
        assert stored["metadata"]["labels"] == {"kubectl-dra.io/node-name": NODE}
        node = plane.request("GET", f"/api/v1/nodes/{NODE}")
        assert stored["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        [event] = plane.request("GET", "/apis/events.k8s.io/v1/namespaces/ml/events")["items"]
        assert (event["reason"], event["reportingController"], event["reportingInstance"], event["type"]) == (
            "CgroupDivergence", "kubectl-dra.io/node-agent", NODE, "Warning")
        assert event["regarding"]["uid"] == uids["burstable"] and "encoder memory.max" in event["note"]
        again = plane.audit_mark()
        agent.scan_once()  # nothing changed: read from the watches, no write, no second Event
        assert plane.requests_since(again, ADMIN) == []
        lists = {e["objectRef"]["resource"]: dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(
            e["requestURI"]).query)).get("fieldSelector") for e in by_agent if e["verb"] == "list"}
        assert lists == {"pods": f"spec.nodeName={NODE}", "nodes": f"metadata.name={NODE}"}
        assert get(base + "/readyz") == (200, "ok\n") and get(base + "/healthz")[0] == 200
        code, served = get(base + "/report")
        assert code == 200 and '"diverged": 1' in served
        _, metrics = get(base + "/metrics")
        assert f'dra_agent_pods{{node="{NODE}",verdict="Diverged"}} 1.0' in metrics
        assert (f'dra_agent_pod_divergences{{cause="DRAAmountMissing",namespace="ml",node="{NODE}",pod="burstable",'
                f'severity="error",uid="{uids["burstable"]}"}} 1.0') in metrics
    finally:
        if agent.server:
            agent.server.shutdown()
        plane.stop()


def test_missing_crd_is_named(tmp_path_factory):
    import pytest

    from kubectl_dra.errors import ApiError

    plane = started(tmp_path_factory.mktemp("no-crd"))
    try:
        load(plane, [p.raw for p in node_pods()] + [NODE_OBJECT])
        work = tmp_path_factory.mktemp("no-crd-tree")
        build_tree(work, node_pods(), NodeOptions())
        agent = Agent(AgentConfig(node=NODE, cgroup_root=str(work / "fs" / "cgroup")),
                      KubeOptions(kubeconfig=str(plane.kubeconfig(work / "kubeconfig"))))
        agent.connect()
        with pytest.raises(ApiError, match=r"NodeEnforcementReport CRD \(nodeenforcementreports.kubectl-dra.io\) is "
                                           r"not installed: kubectl apply -f manifests/agent/crd.yaml"):
            agent.scan_once()
        assert agent.report is not None  # the scan itself succeeded and is served
    finally:
        plane.stop()


def test_completion_reads_names_from_the_cluster(example_cluster):
    """`kubectl dra explain claim <TAB>` lists the claims of the namespace typed so far, as kubectl
    completes `kubectl get resourceclaim <TAB>`; `-n <TAB>` the cluster's namespaces."""
    from kubectl_dra.cli.completion import complete

    plane, kubeconfig = example_cluster
    mark = plane.audit_mark()
    claims = complete(["explain", "claim", "--kubeconfig", kubeconfig, "-n", "default", ""])
    assert claims == ["eval-gpu", "eval-replay-gpu", "risk-engine-cpus", ":4"]
    assert counts(plane.requests_since(mark, ADMIN)) == {"resourceclaims": 1}
    nodes = complete(["--kubeconfig", kubeconfig, "explain", "node", "worker-c"])
    assert nodes == ["worker-cpu-1", ":4"]
    namespaces = complete(["claims", "--kubeconfig", kubeconfig, "-n", ""])
    assert {"default", "ml", "kube-system"} <= set(namespaces[:-1]) and namespaces[-1] == ":4"
    denied = complete(["explain", "pod", "--kubeconfig", kubeconfig, "--as", "alice", ""])
    assert denied == [":4"]
