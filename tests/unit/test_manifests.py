"""The deployment manifests: right Kubernetes types, the security the agent promises, and RBAC
that covers exactly the verbs the code uses (measured by running the code)."""

from __future__ import annotations

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
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"): k8s.V1FlowSchema,
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration"): k8s.V1PriorityLevelConfiguration,
}


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def all_objects() -> list[tuple[Path, dict]]:
    """Kubernetes' own kinds; the prometheus-operator's (components/monitoring) are checked against
    that project's CRD schemas in tests/e2e/test_monitoring.py."""
    return [(p, d) for p in sorted(MANIFESTS.rglob("*.yaml")) for d in documents(p)
            if d.get("kind") not in ("Kustomization", "Component")
            and not d.get("apiVersion", "").startswith("monitoring.coreos.com/")]


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
        entries = doc.get("resources", []) + doc.get("components", []) + [p["path"] for p in doc.get("patches", [])
                                                                            if "path" in p]
        for entry in entries:
            assert (kustomization.parent / entry).exists(), f"{kustomization}: {entry}"
            # kustomize refuses a resource directory that contains the kustomization itself (a cycle)
            assert not kustomization.parent.resolve().is_relative_to((kustomization.parent / entry).resolve()) \
                or (kustomization.parent / entry).is_file(), f"{kustomization}: {entry} contains it"


KUSTOMIZATIONS = sorted(str(p.parent.relative_to(MANIFESTS)) for p in MANIFESTS.rglob("kustomization.yaml")
                        if yaml.safe_load(p.read_text()).get("kind") != "Component")


def rendered(directory: str) -> list[dict]:
    """``kubectl kustomize`` of one kustomization, as `kubectl apply -k` would apply it."""
    import subprocess

    from k8s_build import kubectl_path

    kubectl = kubectl_path()
    if kubectl is None:
        pytest.skip("no kubectl: neither the built v1.37.2 one nor one on PATH")
    result = subprocess.run([kubectl, "kustomize", str(MANIFESTS / directory)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def rendered_daemonset(directory: str):
    return k8s.V1DaemonSet.from_dict(next(d for d in rendered(directory) if d["kind"] == "DaemonSet"))


@pytest.mark.kubectl
@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_every_kustomization_renders_with_kubectl(directory):
    objects = rendered(directory)
    kinds = sorted(d["kind"] for d in objects)
    assert {"CustomResourceDefinition", "DaemonSet", "Namespace", "ServiceAccount"} <= set(kinds)
    for doc in objects:
        assert TYPES[(doc["apiVersion"], doc["kind"])].from_dict(doc) is not None


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
    assert pod.security_context.seccomp_profile.type == "RuntimeDefault"


def test_the_agents_have_their_own_bounded_api_priority():
    """The FlowSchema catches exactly the DaemonSet's ServiceAccount before the suggested
    "service-accounts" schema (9000) does, and its level has a small share that never borrows
    (an unset borrowingLimitPercent is unbounded borrowing): docs/kubernetes/api-priority.md §1, §3.
    The real API server's classification and throttling: tests/cluster/test_api_priority.py."""
    schema = k8s.V1FlowSchema.from_dict(by_kind("FlowSchema"))
    level = k8s.V1PriorityLevelConfiguration.from_dict(by_kind("PriorityLevelConfiguration"))
    account = by_kind("ServiceAccount")["metadata"]
    assert schema.spec.priority_level_configuration.name == level.metadata.name
    assert 900 < schema.spec.matching_precedence < 9000
    [rule] = schema.spec.rules
    assert [(s.kind, s.service_account.name, s.service_account.namespace) for s in rule.subjects] == [
        ("ServiceAccount", account["name"], account["namespace"])]
    assert [(r.verbs, r.api_groups, r.resources, r.namespaces, r.cluster_scope) for r in rule.resource_rules] == [
        (["*"], ["*"], ["*"], ["*"], True)]
    limited = level.spec.limited
    assert level.spec.type == "Limited" and 1 <= limited.nominal_concurrency_shares <= 5  # catch-all has 5
    assert limited.borrowing_limit_percent == 0
    assert limited.limit_response.type == "Queue" and limited.limit_response.queuing.hand_size <= \
        limited.limit_response.queuing.queues


def test_the_namespace_admits_the_agents_host_paths():
    """Pod Security restricted and baseline forbid hostPath volumes: under either, the real API
    server refused the DaemonSet's pod (tests/node/cgroupfs/test_node_daemonset.py runs it). The pod itself
    meets restricted otherwise (test_daemonset_runs_least_privileged)."""
    labels = by_kind("Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert {m["hostPath"]["type"] for m in by_kind("DaemonSet")["spec"]["template"]["spec"]["volumes"]} <= {
        "Directory", "DirectoryOrCreate", "File", "Socket"}


@pytest.mark.kubectl
def test_network_check_overlay_adds_only_what_it_needs():
    base, ds = rendered_daemonset("."), rendered_daemonset("network-check")
    pod, agent = ds.spec.template.spec, ds.spec.template.spec.containers[0]
    assert pod.host_pid is True and pod.security_context.run_as_user == 0
    assert agent.security_context.capabilities.add == ["SYS_ADMIN", "SYS_PTRACE"]
    assert agent.args == base.spec.template.spec.containers[0].args + ["--check-network", "--proc-root=/host/proc"]
    assert {m.mount_path for m in agent.volume_mounts} - {m.mount_path for m in base.spec.template.spec.containers[0].volume_mounts} \
        == {"/host/proc"}


@pytest.mark.kubectl
def test_kubelet_state_overlay_mounts_the_kubelet_root_read_only_with_its_secrets_hidden():
    base, ds = rendered_daemonset("."), rendered_daemonset("kubelet-state")
    pod, agent = ds.spec.template.spec, ds.spec.template.spec.containers[0]
    # root, to read 0600 root files; nothing else: every capability dropped, no host namespaces
    assert pod.security_context.run_as_user == 0 and not pod.host_pid and not pod.host_network
    assert agent.security_context.capabilities.drop == ["ALL"] and not agent.security_context.capabilities.add
    assert agent.security_context.read_only_root_filesystem and agent.security_context.allow_privilege_escalation is False
    added = [m for m in agent.volume_mounts
             if m.mount_path not in {b.mount_path for b in base.spec.template.spec.containers[0].volume_mounts}]
    assert all(m.read_only for m in added)
    volumes = {v.name: v for v in pod.volumes}
    # the directory, not the files: the kubelet renames a new checkpoint over the old at each change
    root = next(m for m in added if m.mount_path == "/host/var/lib/kubelet")
    assert (volumes[root.name].host_path.path, volumes[root.name].host_path.type) == ("/var/lib/kubelet", "Directory")
    hidden = {m.mount_path.rsplit("/", 1)[1] for m in added if volumes[m.name].empty_dir is not None}
    assert hidden == {"pods", "pki", "plugins", "plugins_registry", "device-plugins"}
    assert len(added) == 1 + len(hidden)
    assert "--kubelet-root=/host/var/lib/kubelet" in agent.args


def test_crd_printer_columns_and_example_reports_fit_the_schema():
    crd = by_kind("CustomResourceDefinition")
    version = crd["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Node", "Pods", "Diverged", "Claim-Findings", "Agent", "Age"]
    assert version["subresources"] == {"status": {}}
    status_schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    for report in (ROOT / "examples" / "cluster" / "reports").glob("*.yaml"):
        doc = yaml.safe_load(report.read_text())
        assert set(doc["status"]) <= set(status_schema), report
        assert set(doc["status"]["summary"]) == set(status_schema["summary"]["properties"])


@pytest.mark.kubectl
def test_node_dra_state_overlay_mounts_only_what_its_checks_need():
    base, ds = rendered_daemonset("."), rendered_daemonset("node-dra-state")
    pod, agent = ds.spec.template.spec, ds.spec.template.spec.containers[0]
    base_agent = base.spec.template.spec.containers[0]
    # the base reads nothing of the kubelet's or the runtime's state
    assert not [m for m in base_agent.volume_mounts if "kubelet" in m.mount_path or "cdi" in m.mount_path]
    added = sorted((m.mount_path, m.read_only) for m in agent.volume_mounts
                   if m.mount_path not in {b.mount_path for b in base_agent.volume_mounts})
    kubelet = "/host/var/lib/kubelet"
    # the kubelet's root, read-only (its checkpoints are replaced, never rewritten in place: a file
    # mount would go stale), with what holds secrets, keys and plugin sockets hidden under empty dirs
    hidden = ["device-plugins", "pki", "plugins", "plugins_registry", "pods"]
    assert added == sorted([("/host/etc/cdi", True), (kubelet, True), (f"{kubelet}/pod-resources", True),
                            ("/host/var/run/cdi", True), *((f"{kubelet}/{h}", True) for h in hidden)])
    volumes = {v.name: v for v in pod.volumes}
    by_path = {m.mount_path: volumes[m.name] for m in agent.volume_mounts}
    assert (by_path[kubelet].host_path.path, by_path[kubelet].host_path.type) == ("/var/lib/kubelet", "Directory")
    for name in hidden:
        assert by_path[f"{kubelet}/{name}"].empty_dir is not None and by_path[f"{kubelet}/{name}"].host_path is None
    assert by_path[f"{kubelet}/pod-resources"].host_path.path == "/var/lib/kubelet/pod-resources"
    assert agent.args == base_agent.args + ["--cdi-dir=/host/etc/cdi", "--cdi-dir=/host/var/run/cdi"]
    # root for the 0600 checkpoints and the root-owned socket, and nothing more
    assert pod.security_context.run_as_user == 0 and not pod.host_pid and not pod.host_network
    assert agent.security_context.capabilities.drop == ["ALL"] and not agent.security_context.capabilities.add
    assert agent.security_context.read_only_root_filesystem and agent.security_context.allow_privilege_escalation is False


@pytest.mark.kubectl
def test_the_cdi_component_alone_keeps_the_agent_non_root(tmp_path):
    import shutil
    import subprocess

    from k8s_build import kubectl_path

    overlay = tmp_path / "overlay"
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources: [../manifests/agent]\ncomponents: [../manifests/components/cdi]\n")
    out = subprocess.run([kubectl_path(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ds = k8s.V1DaemonSet.from_dict(next(d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] == "DaemonSet"))
    assert ds.spec.template.spec.security_context.run_as_non_root and ds.spec.template.spec.security_context.run_as_user == 65532
