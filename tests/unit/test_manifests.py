"""The deployment manifests: right Kubernetes types, the security the agent promises, and RBAC
that covers exactly the verbs the code uses (measured by running the code)."""

from __future__ import annotations

import threading
from pathlib import Path

import kubernetes.client as k8s
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
TYPES = {
    ("v1", "Namespace"): k8s.V1Namespace, ("v1", "ServiceAccount"): k8s.V1ServiceAccount,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.V1CustomResourceDefinition,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.V1ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.V1ClusterRoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.V1PriorityClass,
    ("apps/v1", "DaemonSet"): k8s.V1DaemonSet,
}


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def all_objects() -> list[tuple[Path, dict]]:
    return [(p, d) for p in sorted(MANIFESTS.rglob("*.yaml")) for d in documents(p)
            if d.get("kind") != "Kustomization" and not p.name.endswith("-patch.yaml")]


def by_kind(kind: str, name: str | None = None) -> dict:
    return next(d for _, d in all_objects() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name))


@pytest.mark.parametrize("path,doc", all_objects(), ids=lambda v: v.name if isinstance(v, Path) else v.get("kind", ""))
def test_every_manifest_is_a_valid_kubernetes_object(path, doc):
    model = TYPES[(doc["apiVersion"], doc["kind"])]
    obj = model.from_dict(doc)
    assert obj is not None and obj.metadata.name == doc["metadata"]["name"]


def test_kustomizations_list_existing_files():
    for kustomization in MANIFESTS.rglob("kustomization.yaml"):
        doc = yaml.safe_load(kustomization.read_text())
        for entry in doc.get("resources", []) + [p["path"] for p in doc.get("patches", [])]:
            assert (kustomization.parent / entry).exists(), f"{kustomization}: {entry}"


def test_daemonset_runs_least_privileged():
    ds = k8s.V1DaemonSet.from_dict(by_kind("DaemonSet"))
    pod = ds.spec.template.spec
    [agent] = pod.containers
    assert pod.security_context.run_as_non_root and pod.security_context.run_as_user != 0
    assert not pod.host_pid and not pod.host_network
    ctx = agent.security_context
    assert ctx.read_only_root_filesystem and ctx.allow_privilege_escalation is False
    assert ctx.capabilities.drop == ["ALL"] and not ctx.capabilities.add and not ctx.privileged
    mounts = {m.mount_path: m for m in agent.volume_mounts}
    assert mounts["/host/sys/fs/cgroup"].read_only and all(m.read_only for m in mounts.values())
    assert "--cgroup-root=/host/sys/fs/cgroup" in agent.args
    env = {e.name: e for e in agent.env}
    assert env["NODE_NAME"].value_from.field_ref.field_path == "spec.nodeName"
    assert agent.liveness_probe.http_get.path == "/healthz" and agent.readiness_probe.http_get.path == "/readyz"
    assert agent.resources.requests and agent.resources.limits["memory"]
    assert pod.node_selector == {"kubernetes.io/os": "linux"}
    assert any(t.operator == "Exists" and not t.key for t in pod.tolerations)
    assert pod.priority_class_name == by_kind("PriorityClass")["metadata"]["name"]
    assert ds.spec.update_strategy.rolling_update.max_unavailable == "10%"
    assert ds.metadata.labels["app.kubernetes.io/part-of"] == "kubectl-dra"
    assert pod.service_account_name == by_kind("ServiceAccount")["metadata"]["name"]


def test_network_check_overlay_adds_only_what_it_needs():
    patch = documents(MANIFESTS / "network-check" / "daemonset-patch.yaml")[0]
    pod = patch["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    assert pod["containers"][0]["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN", "SYS_PTRACE"]
    assert "--check-network" in pod["containers"][0]["args"]


def test_crd_printer_columns_and_example_reports_fit_the_schema():
    crd = by_kind("CustomResourceDefinition")
    version = crd["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Node", "Pods", "Diverged", "Age"]
    assert version["subresources"] == {"status": {}}
    status_schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    for report in (ROOT / "examples" / "cluster" / "reports").glob("*.yaml"):
        doc = yaml.safe_load(report.read_text())
        assert set(doc["status"]) <= set(status_schema), report
        assert set(doc["status"]["summary"]) == set(status_schema["summary"]["properties"])


def rules_of(role: dict) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def verbs_used(server) -> set[tuple[str, str, str]]:
    """(apiGroup, resource[/subresource], verb) of every resource request the server saw."""
    used = set()
    for r in server.requests:
        route = r.route
        if route is None or route.plural is None:
            continue  # discovery: allowed to every authenticated user
        resource = route.plural + (f"/{route.subresource}" if route.subresource else "")
        if r.method == "GET":
            verb = "watch" if r.is_watch else "list" if r.is_list else "get"
        else:
            verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[r.method]
        used.add((route.group, resource, verb))
    return used


def test_agent_rbac_is_exactly_what_the_agent_does(tmp_path, make_apiserver, kubeconfig_for):
    from cgroup_tree import build_tree, set_file
    from agentpods import NODE, NODE_OBJECT, node_pods

    from kubectl_dra.cgroups.options import NodeOptions
    from kubectl_dra.cli.options import KubeOptions
    from node_agent.service import Agent, AgentConfig

    pods = node_pods()
    dirs = build_tree(tmp_path, pods, NodeOptions())
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))
    server = make_apiserver([p.raw for p in pods] + [NODE_OBJECT], served={"kubectl-dra.io": ["v1alpha1"]})
    server.watch_timeout = 0.2
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(tmp_path / "fs" / "cgroup"), watch_timeout=0.2),
                  KubeOptions(kubeconfig=str(kubeconfig_for(server))))
    agent.connect()
    agent.scan_once()
    watcher = threading.Thread(target=agent.watch_pods, daemon=True)
    watcher.start()
    watcher.join(timeout=0.5)
    agent.stop.set()
    watcher.join(timeout=5)
    role = by_kind("ClusterRole", "kubectl-dra:node-agent")
    assert verbs_used(server) == rules_of(role)


def test_viewer_rbac_covers_every_cli_read(make_apiserver, kubeconfig_for, dra, tmp_path):
    from kubectl_dra.kube.snapshot import load_snapshot
    from kubectl_dra.model.registry import MODELS

    objects = [o.raw for m in MODELS for o in load_snapshot(ROOT / "examples" / "cluster").all(m)]
    server = make_apiserver(objects, served={"kubectl-dra.io": ["v1alpha1"], "karpenter.sh": ["v1", "v1alpha1"]})
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    for args in (["claims", "-A", "-o", "wide"], ["explain", "claim", "eval-gpu", "-n", "default"],
                 ["explain", "pod", "embedder"], ["verify", "-A"], ["snapshot", "-A", "-o", str(tmp_path / "b")]):
        dra(*args, "--kubeconfig", kubeconfig)
    assert verbs_used(server) == rules_of(by_kind("ClusterRole", "kubectl-dra:viewer"))
