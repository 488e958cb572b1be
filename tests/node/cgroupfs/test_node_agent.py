"""The agent on the real node: ``dra-node-agent scan --once`` inside the guest, on the real
/sys/fs/cgroup, /var/lib/kubelet (cpu_manager_state, dra_manager_state, the PodResources socket) and
/var/run/cdi, with the agent's own ServiceAccount (manifests/agent/rbac.yaml, as shipped), says
Match for every pod; ``dra-node-agent run`` publishes that report, and ``kubectl dra verify`` on the
host agrees."""

from __future__ import annotations

import json

from boots import CGROUPFS_AGENT_FLAGS
from nodecheck import claim_findings, divergences, scan, verdicts

import matrix


def test_scan_once_on_the_node_says_match_for_every_pod(cgroupfs_node):
    rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)  # the driver is found in the tree
    assert rc == 0, stderr
    status = doc["status"]
    assert verdicts(doc) == {p["metadata"]["name"]: "Match" for p in matrix.pods()}
    assert status["summary"]["pods"] == status["summary"]["matched"] == len(matrix.pods())
    assert divergences(doc) == [] and claim_findings(doc) == []
    # every node-side source was read, and what it says is what the node did
    assert {s["name"]: s["state"] for s in status["sources"]} == {"draCheckpoint": "read", "cdi": "read",
                                                                  "podResources": "read"}
    assert len(status["claims"]) == 4 and all(c["prepared"] and c["api"] == "read" for c in status["claims"])
    options, source = status["nodeOptions"], status["nodeOptionsSource"]
    assert (options["cgroupDriver"], source["cgroupDriver"]) == ("cgroupfs", "cgroup tree")
    assert (options["cpuManagerPolicy"], source["cpuManagerPolicy"].split(" ")[0]) == (
        "static", "/var/lib/kubelet/cpu_manager_state")
    assert (options["runtimeHugetlb"], source["runtimeHugetlb"]) == (False, "cgroup tree")
    assert options["kubeletDra"] is True and "declaredFeatures lists" in source["kubeletDra"]
    assert options["hugepageSizes"] == [2 << 20, 1 << 30] and options["weightFormula"] == "quadratic"
    pinned = next(p for p in status["pods"] if p["name"] == "exclusive")["exclusiveCpus"]
    assert list(pinned) == ["pinned"]


def test_the_published_report_and_verify_on_the_host_agree(cgroupfs_node, dra):
    """``dra-node-agent run`` in the guest writes the NodeEnforcementReport through the API server;
    ``kubectl dra verify`` on the host reads it back: every pod Match, exit 0."""
    node, plane = cgroupfs_node.node, cgroupfs_node.plane
    from vm import ROOT

    node.vm.spawn("agent", [str(ROOT / ".venv" / "bin" / "dra-node-agent"), "run", "--kubeconfig",
                            cgroupfs_node.agent_kubeconfig, "--node", node.name, "--listen", "127.0.0.1:18080",
                            "--interval", "3600", *CGROUPFS_AGENT_FLAGS], env={"PYTHONDONTWRITEBYTECODE": "1"})
    try:
        report = node._until(lambda: _report(plane, node.name), 300, "the agent's NodeEnforcementReport")
        assert report["status"]["summary"]["matched"] == len(matrix.pods())
        result = dra("verify", "--node", node.name, "--kubeconfig", cgroupfs_node.user_kubeconfig, "-o", "json")
        assert result.exit_code == 0, result
        doc = result.json()
        assert doc["kind"] == "NodeEnforcementReportList" and len(doc["items"]) == 1 and verdicts(doc["items"][0]) == {
            p["metadata"]["name"]: "Match" for p in matrix.pods()}
        table = dra("verify", "--node", node.name, "--kubeconfig", cgroupfs_node.user_kubeconfig)
        assert table.exit_code == 0 and f"1 node, {len(matrix.pods())} pods: {len(matrix.pods())} match" in table.stdout
    finally:
        assert node.vm.daemon_status("agent")["running"], node.vm.tail()  # it never exited on its own
        node.vm.stop_daemon("agent")


def _report(plane, name: str) -> dict | None:
    result = plane.kubectl("get", "nodeenforcementreports.kubectl-dra.io", name, "-o", "json", check=False)
    if result.returncode != 0:
        return None
    report = json.loads(result.stdout)
    return report if report.get("status", {}).get("summary") else None

