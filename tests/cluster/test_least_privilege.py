"""Least privilege, enforced by the real authorizer: the manifests applied with the v1.37.2 kubectl;
the agent runs with its ServiceAccount's token and does its whole job; every verb it used is in
its ClusterRole and nothing more (the API server's audit log), each rule is allowed and the verbs
it does not need are denied (SubjectAccessReviews). The viewer role reads everything `kubectl dra`
needs and can write nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from agentpods import NODE, NODE_OBJECT, node_pods
from controlplane import started
from cgroup_tree import build_tree, set_file
from kubelet_files import write_checkpoint
from loader import load
from test_real_objects import EXAMPLE, crds, raw_objects

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.registry import parse_object
from node_agent.service import Agent, AgentConfig

ROOT = Path(__file__).resolve().parents[2]
AGENT = "system:serviceaccount:kubectl-dra-system:dra-node-agent"
SA_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:kubectl-dra-system", "system:authenticated")


def role(name: str) -> dict:
    return next(d for d in yaml.safe_load_all((ROOT / "manifests" / "agent" / "rbac.yaml").read_text())
                if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == name)


def rules_of(cluster_role: dict) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in cluster_role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def used(events: list[dict]) -> set[tuple[str, str, str]]:
    out = set()
    for e in events:
        ref = e["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        out.add((ref.get("apiGroup", ""), resource, e["verb"]))
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A cluster with kubectl-dra installed the way the README says: kubectl apply -k manifests/."""
    plane = started(tmp_path_factory.mktemp("rbac-plane"))
    try:
        yield _install(plane, tmp_path_factory)
    finally:
        plane.stop()


def _install(plane, tmp_path_factory):
    applied = plane.kubectl("apply", "-k", str(ROOT / "manifests"))
    assert "daemonset.apps/dra-node-agent created" in applied.stdout
    plane.kubectl("wait", "--for=condition=Established", "crd/nodeenforcementreports.kubectl-dra.io")
    load(plane, [c for c in crds() if c["metadata"]["name"] != "nodeenforcementreports.kubectl-dra.io"]
         + [o for o in raw_objects(EXAMPLE) if o["kind"] != "NodeEnforcementReport"])
    load(plane, [p.raw for p in node_pods()] + [NODE_OBJECT])
    return plane, tmp_path_factory.mktemp("rbac")


def test_the_agent_does_its_job_with_exactly_its_role(installed):
    plane, work = installed
    # the tree the node would have for the pods as the API server now holds them (new UIDs)
    items = plane.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}")["items"]
    pods = [parse_object({"apiVersion": "v1", "kind": "Pod", **p}) for p in items]
    dirs = build_tree(work / "node", pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))
    # the kubelet's checkpoint holds claim ml/x (which every pod references) under a UID the API
    # does not have: the node keeps a claim that no longer exists
    stale = {"ClaimUID": "0b5e0f7e-5d7c-4c1f-9d7e-000000000001", "ClaimName": "x", "Namespace": "ml",
             "PodUIDs": {p.uid: {} for p in pods},
             "DriverState": {"gpu.example.com": {"Devices": [{"PoolName": NODE, "DeviceName": "gpu-0", "ShareID": None,
                                                              "RequestNames": ["gpu"], "CDIDeviceIDs": []}]}}}
    write_checkpoint(work / "kubelet", [stale])
    token = plane.service_account_token("kubectl-dra-system", "dra-node-agent")
    kubeconfig = plane.kubeconfig(work / "agent.kubeconfig", token=token, user="dra-node-agent")
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(work / "node" / "fs" / "cgroup"), watch_timeout=1,
                              kubelet_root=str(work / "kubelet"), cdi_dirs=()),
                  KubeOptions(kubeconfig=str(kubeconfig)))
    mark = plane.audit_mark()
    agent.connect()
    report = agent.scan_once()  # lists, then watches (node_agent/cache.py), of pods, the Node and claim ml/x
    time.sleep(1.5)  # watch_timeout=1: each stream ends and is logged (the audit log's ResponseComplete)
    agent.shutdown()
    assert report.status.summary.model_dump() == {"pods": 4, "matched": 3, "diverged": 1, "unknown": 0, "claims": 1,
                                                  "claim_findings": 4}
    assert {f.code for f in report.status.claims[0].findings} == {"PreparedNotReserved"}
    assert report.status.claims[0].api == "missing"  # the real server's empty list, not a failed read
    stored = plane.request("GET", f"/apis/kubectl-dra.io/v1alpha1/nodeenforcementreports/{NODE}")
    assert stored["status"]["summary"]["diverged"] == 1  # written through the status subresource
    assert [c["name"] for c in stored["status"]["claims"]] == ["x"]  # kept by the CRD's schema
    assert stored["status"]["sources"][0] == {"name": "draCheckpoint", "path": str(work / "kubelet" / "dra_manager_state"),
                                              "state": "read", "message": "1 prepared claim"}
    events = plane.request("GET", "/apis/events.k8s.io/v1/namespaces/ml/events")["items"]
    assert sorted((e["reason"], e["regarding"]["kind"], e["regarding"]["name"]) for e in events) == [
        ("CgroupDivergence", "Pod", "burstable"), *[("PreparedNotReserved", "ResourceClaim", "x")] * 4]
    # what it did is exactly what its ClusterRole grants, measured by the API server itself
    agent_role = role("kubectl-dra:node-agent")
    assert used(plane.requests_since(mark, AGENT)) == rules_of(agent_role)


def test_every_agent_rule_is_allowed_and_nothing_else(installed):
    plane, _ = installed
    for group, resource, verb in sorted(rules_of(role("kubectl-dra:node-agent"))):
        name, _, sub = resource.partition("/")
        assert plane.can(AGENT, verb, name, group, subresource=sub, groups=SA_GROUPS), (group, resource, verb)
    for group, resource, verb, sub in [
            ("", "secrets", "get", ""), ("", "pods", "get", ""), ("", "pods", "create", ""), ("", "pods", "delete", ""),
            ("", "pods", "update", "status"), ("", "nodes", "patch", ""), ("", "nodes", "get", ""),
            ("resource.k8s.io", "resourceclaims", "get", ""),
            ("resource.k8s.io", "resourceclaims", "update", "status"), ("resource.k8s.io", "resourceslices", "list", ""),
            ("kubectl-dra.io", "nodeenforcementreports", "delete", ""), ("kubectl-dra.io", "nodeenforcementreports",
                                                                        "update", ""),
            ("kubectl-dra.io", "nodeenforcementreports", "list", ""), ("events.k8s.io", "events", "delete", ""),
            ("", "nodes", "proxy", "")]:
        assert not plane.can(AGENT, verb, resource, group, subresource=sub, groups=SA_GROUPS), (resource, verb, sub)


def test_the_viewer_reads_everything_and_writes_nothing(installed, dra):
    plane, work = installed
    plane.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sre"}})
    plane.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "sre-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubectl-dra:viewer"},
        "subjects": [{"kind": "ServiceAccount", "name": "sre", "namespace": "default"}]})
    user = "system:serviceaccount:default:sre"
    kubeconfig = str(plane.kubeconfig(work / "sre.kubeconfig", token=plane.service_account_token("default", "sre"),
                                      user="sre", namespace="ml"))
    mark = plane.audit_mark()
    for args, code in ((["claims", "-A", "-o", "wide"], 0), (["explain", "claim", "eval-gpu", "-n", "default"], 0),
                       (["explain", "pod", "embedder"], 0), (["explain", "pod", "feature-store"], 0),
                       (["explain", "node", "worker-gpu-1"], 0),
                       (["overlays"], 0), (["verify", "-A"], None), (["taints"], None),
                       (["snapshot", "-A", "-o", str(work / "b")], 0)):
        result = dra(*args, "--kubeconfig", kubeconfig)
        assert "forbidden" not in result.stderr, (args, result.stderr)
        if code is not None:
            assert result.exit_code == code, (args, result)
    viewer = role("kubectl-dra:viewer")
    assert used(plane.requests_since(mark, user)) == rules_of(viewer)
    # what the agent published (the other test) reads back through verify, with the viewer's rights
    verify = dra("verify", "--node", NODE, "--kubeconfig", kubeconfig)
    assert verify.exit_code == 1, verify
    assert ["burstable", "encoder", "memory.max"] == verify.stdout.splitlines()[1].split()[1:4]  # NODE: -o wide
    for group, resource, _ in sorted(rules_of(viewer)):
        for verb in ("create", "update", "patch", "delete"):
            assert not plane.can(user, verb, resource, group, groups=("system:authenticated",)), (resource, verb)
