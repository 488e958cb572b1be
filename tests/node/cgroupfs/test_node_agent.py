"""The agent on a node shell: ``dra-node-agent scan --once`` inside the guest, on the real
/sys/fs/cgroup, /var/lib/kubelet (cpu_manager_state, dra_manager_state, the PodResources socket) and
/var/run/cdi, with the agent's own ServiceAccount (manifests/agent/rbac.yaml, as shipped), says
Match for every pod and exits 0. (The agent as a service, publishing what ``kubectl dra verify``
reads, is test_node_daemonset's: deployed from its image.)"""

from __future__ import annotations

from boots import CGROUPFS_AGENT_FLAGS
from nodecheck import claim_findings, divergences, scan, verdicts

import matrix


def test_scan_once_on_the_node_says_match_for_every_pod(cgroupfs_node):
    rc, doc, stderr = scan(cgroupfs_node, *CGROUPFS_AGENT_FLAGS)  # the driver is found in the tree
    assert rc == 0, stderr
    status = doc["status"]
    # the matrix's pods, and the deployed agent's own when test_node_daemonset's deployment is up
    assert matrix.names() <= set(verdicts(doc)) <= matrix.names() | {p for p in verdicts(doc) if "dra-node-agent" in p}
    assert set(verdicts(doc).values()) == {"Match"}
    assert status["summary"]["pods"] == status["summary"]["matched"] == len(verdicts(doc))
    assert divergences(doc) == [] and claim_findings(doc) == []
    # every node-side source was read, and what it says is what the node did
    assert {s["name"]: s["state"] for s in status["sources"]} == {"draCheckpoint": "read", "cdi": "read",
                                                                  "podResources": "read"}
    assert len(status["claims"]) == matrix.CLAIMS and all(c["prepared"] and c["api"] == "read" for c in status["claims"])
    options, source = status["nodeOptions"], status["nodeOptionsSource"]
    assert (options["cgroupDriver"], source["cgroupDriver"]) == ("cgroupfs", "cgroup tree")
    assert (options["cpuManagerPolicy"], source["cpuManagerPolicy"].split(" ")[0]) == (
        "static", "/var/lib/kubelet/cpu_manager_state")
    assert (options["runtimeHugetlb"], source["runtimeHugetlb"]) == (False, "cgroup tree")
    assert options["kubeletDra"] is True and "declaredFeatures lists" in source["kubeletDra"]
    assert options["hugepageSizes"] == [2 << 20, 1 << 30] and options["weightFormula"] == "quadratic"
    pinned = next(p for p in status["pods"] if p["name"] == "exclusive")["exclusiveCpus"]
    assert list(pinned) == ["pinned"]
