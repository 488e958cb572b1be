"""The agent reads the API from watches (node_agent/cache.py): after the first scan, scans list
nothing; a change wakes the agent and is seen from memory; claims are listed only when the set the
node uses changes; and what a watch can no longer follow is listed again, never served. The fake
API server records every request (the real one's audit log counts them in
tests/cluster/test_agent_requests.py) and injects the faults."""

from __future__ import annotations

import pytest
from agentpods import NODE, NODE_OBJECT, node_claim, node_pods
from cgroup_tree import build_tree, set_file
from kubelet_files import claim_state, write_checkpoint
from test_agent_service import until

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.errors import ApiError
from kubectl_dra.kube.options import KubeOptions
from node_agent.service import Agent, AgentConfig


class Node:
    """A node with four pods that use claim ml/x, its cgroup tree, the kubelet's checkpoint, the
    fake API server and an agent on it."""

    def __init__(self, tmp_path, make_apiserver, kubeconfig_for):
        self.tmp, self.pods = tmp_path, node_pods()
        dirs = build_tree(tmp_path, self.pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30]))
        set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))  # one divergence
        self.claims = {"x": node_claim("x", self.pods)}
        self.checkpoint(["x"])
        self.server = make_apiserver([p.raw for p in self.pods] + [NODE_OBJECT, self.claims["x"]],
                                     served={"kubectl-dra.io": ["v1alpha1"]})
        self.agent = Agent(AgentConfig(node=NODE, cgroup_root=str(tmp_path / "fs" / "cgroup"), interval=0.2,
                                       kubelet_root=str(tmp_path / "kubelet"), cdi_dirs=()),
                           KubeOptions(kubeconfig=str(kubeconfig_for(self.server))))
        self.agent.connect()

    def checkpoint(self, names) -> None:
        write_checkpoint(self.tmp / "kubelet", [claim_state(self.claims[n], [p.uid for p in self.pods]) for n in names])

    def lists(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for request in self.server.list_requests():
            counts[request.resource] = counts.get(request.resource, 0) + 1
        return counts

    def watched(self) -> set[str]:
        return {request.query.get("fieldSelector", "") for request in self.server.watch_requests()}


@pytest.fixture
def node(tmp_path, make_apiserver, kubeconfig_for):
    node = Node(tmp_path, make_apiserver, kubeconfig_for)
    yield node
    node.agent.shutdown()


def test_after_the_first_scan_a_scan_lists_nothing(node):
    first = node.agent.scan_once()
    assert node.lists() == {"pods": 1, "nodes": 1, "resourceclaims": 1}
    assert until(lambda: node.watched() == {f"spec.nodeName={NODE}", f"metadata.name={NODE}", "metadata.name=x"})
    for _ in range(5):
        again = node.agent.scan_once()
    assert node.lists() == {"pods": 1, "nodes": 1, "resourceclaims": 1}  # five scans: not one list
    assert again.status.summary == first.status.summary
    assert again.status.summary.diverged == 1 and again.status.claims[0].api == "read"
    sample = node.agent.metrics.registry.get_sample_value  # what an operator sees of it
    assert (sample("dra_agent_api_lists", {"node": NODE}), sample("dra_agent_api_watches", {"node": NODE})) == (3, 3)


def test_a_change_wakes_the_agent_and_is_seen_from_memory(node):
    node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 3)
    node.agent.trigger.clear()
    node.server.remove("pods", "besteffort", "ml")
    assert node.agent.trigger.wait(5)  # the pod watch woke the scan loop
    assert node.agent.scan_once().status.summary.pods == 3
    node.agent.trigger.clear()
    node.server.remove("resourceclaims.resource.k8s.io", "x", "ml")  # the claim goes; the kubelet still has it
    assert node.agent.trigger.wait(5)
    report = node.agent.scan_once()
    assert report.status.claims[0].api == "missing"  # the watch's DELETED, not a failed read
    assert node.lists() == {"pods": 1, "nodes": 1, "resourceclaims": 1}


def test_a_claim_is_listed_when_the_node_starts_using_it_and_unwatched_when_it_stops(node):
    node.server.watch_timeout = 60.0  # streams stay open: closing one must end it, not its timeout
    node.agent.scan_once()
    node.claims["y"] = node_claim("y", node.pods)
    node.server.add(node.claims["y"])
    node.checkpoint(["x", "y"])  # the kubelet prepares a second claim
    report = node.agent.scan_once()
    assert sorted(c.name for c in report.status.claims) == ["x", "y"]
    assert node.lists() == {"pods": 1, "nodes": 1, "resourceclaims": 2}  # one list: the new claim's
    assert until(lambda: "metadata.name=y" in node.watched())
    y = node.agent.source.watched[("ResourceClaim", "ml", "metadata.name=y", None)]
    node.checkpoint(["x"])  # y unprepared, and no pod uses it
    node.agent.scan_once()
    assert ("ResourceClaim", "ml", "metadata.name=y", None) not in node.agent.source.watched
    assert until(lambda: not y.following, timeout=2.0)  # its stream was shut, not left to time out
    node.agent.scan_once()
    assert node.lists() == {"pods": 1, "nodes": 1, "resourceclaims": 2}


def test_a_lost_watch_is_listed_again_and_a_failed_list_keeps_the_last_report(node):
    good = node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 3)
    node.server.fail(500, resource="pods")  # lists and watches of pods
    node.server.drop_watches()
    assert until(lambda: node.agent.source.open_watches() < 3)  # what the pod watch held is no longer served
    with pytest.raises(ApiError):
        node.agent.scan_once()
    assert node.agent.report is good
    node.server.clear_failures()
    assert node.agent.scan_once().status.summary == good.status.summary
    assert node.lists()["pods"] >= 2  # listed again, then followed again
    assert until(lambda: node.agent.source.open_watches() == 3)


def test_pods_the_server_refuses_fail_the_scan_and_are_never_taken_as_gone(node):
    """A restarted API server answers 403 until its authorizer has synced (seen on the real one, in
    tests/node: the agent then published PreparedForGonePod for every claim of the node). Pods not
    read are not "no pods": the scan fails, the last report stays, no finding is drawn."""
    good = node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 3)
    node.server.fail(403, resource="pods")
    node.server.drop_watches()
    assert until(lambda: node.agent.source.open_watches() < 3)
    with pytest.raises(ApiError, match="cannot read the pods of node"):
        node.agent.scan_once()
    assert node.agent.report is good
    assert not [c for c in good.status.claims if any(f.code == "PreparedForGonePod" for f in c.findings)]
    node.server.clear_failures()
    assert node.agent.scan_once().status.summary == good.status.summary


def test_an_expired_resource_version_lists_again_and_keeps_what_changed(node):
    node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 3)
    node.server.compact()
    node.server.drop_watches()  # each watch resumes from a resourceVersion that is gone: 410
    assert until(lambda: node.lists().get("pods") == 2 and node.lists().get("nodes") == 2)
    node.server.remove("pods", "guaranteed", "ml")
    assert until(lambda: node.agent.scan_once().status.summary.pods == 3)
    assert node.agent.source.open_watches() == 3


def test_a_watch_the_role_refuses_falls_back_to_a_list_per_scan_said_once_and_never_a_storm(node, capsys):
    node.server.fail(403, resource="nodes", watch=True)  # a ClusterRole from before the agent watched nodes
    node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 2)  # the Node's watch was refused
    node.agent.trigger.clear()
    for _ in range(4):
        node.agent.scan_once()
    assert not node.agent.trigger.is_set()  # a refusal is no change: it never wakes a scan by itself
    assert node.lists() == {"pods": 1, "nodes": 5, "resourceclaims": 1}  # the Node listed at each scan
    assert len(node.server.watch_requests("nodes")) == 1  # and never asked to watch again
    said = capsys.readouterr().err
    assert said.count("warning: cannot watch nodes") == 1 and "listing it at every scan instead" in said


def fresh_scan(node):
    """What an agent that starts now reads (its first scan lists everything)."""
    agent = Agent(node.agent.config, node.agent.kube)
    agent.connect()
    try:
        return agent.scanner.run()
    finally:
        agent.shutdown()


@pytest.mark.parametrize("field", ["overhead", "containers"])
def test_a_scan_from_memory_says_what_a_fresh_read_says_about_a_field_that_stops_validating(node, field):
    node.agent.scan_once()
    assert until(lambda: node.agent.source.open_watches() == 3)
    broken = next(p for p in node.pods if p.name == "burstable").raw
    broken = {**broken, "spec": {**broken["spec"], field: {"memory": "lots"} if field == "overhead" else "none"}}
    node.agent.trigger.clear()
    node.server.add(broken)
    assert node.agent.trigger.wait(5)
    ours, fresh = node.agent.scanner.run(), fresh_scan(node)
    assert [p.message for p in ours.inventory.problems] == [p.message for p in fresh.inventory.problems] != []
    assert [(p.name, p.verdict) for p in ours.report.status.pods] == \
        [(p.name, p.verdict) for p in fresh.report.status.pods]
    node.server.add(next(p for p in node.pods if p.name == "burstable").raw)  # mended
    assert until(lambda: node.agent.scanner.run().inventory.problems == [])


def test_a_changed_report_costs_one_request_and_a_deleted_one_is_made_again(node):
    node.agent.scan_once()  # the first write: GET (404), POST, PATCH status
    reports = lambda: [(r.method, r.path.rsplit("/", 1)[-1]) for r in node.server.requests  # noqa: E731
                       if "nodeenforcementreports" in r.path]
    assert reports() == [("GET", NODE), ("POST", "nodeenforcementreports"), ("PATCH", "status")]
    node.agent.publisher.min_interval = 0
    node.server.remove("pods", "besteffort", "ml")
    assert until(lambda: node.agent.scan_once().status.summary.pods == 3)
    assert reports()[3:] == [("PATCH", "status")]  # known to exist: the change alone
    node.server.remove("nodeenforcementreports.kubectl-dra.io", NODE)  # someone deletes it
    node.server.remove("pods", "pod-level", "ml")
    assert until(lambda: node.agent.scan_once().status.summary.pods == 2)
    assert reports()[4:] == [("PATCH", "status"), ("POST", "nodeenforcementreports"), ("PATCH", "status")]
    assert node.server.get("nodeenforcementreports.kubectl-dra.io", NODE)["status"]["summary"]["pods"] == 2
