"""What the agent costs the real API server, counted from its audit log (issue 27): after its first
scan (one list each of its node's pods, its Node and the claim its node uses, then a watch of each),
an idle node makes no request at all, scan after scan; a pod or claim that changes is seen through
the watches without a list, and the report is written (one request) only because its content changed; a claim
the node starts using costs one list and one watch. The bound the issue sets is at most one
request per minute apart from the open watches; the measured figure is zero."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from agentpods import NODE, NODE_OBJECT, node_claim, node_pods
from cgroup_tree import build_tree
from clusterobjects import wait_for
from controlplane import started
from kubelet_files import claim_state, write_checkpoint
from loader import load
from test_least_privilege import AGENT, ROOT

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.registry import parse_object
from node_agent.service import Agent, AgentConfig

IDLE_SECONDS = 20
INTERVAL = 1.0  # the shipped interval is 60 s: here 20 interval scans fit in the idle window


class Audit:
    """The real API server's audit log, read as it grows: the agent's finished requests and the
    watches it opened (a watch is logged when its response starts, ResponseStarted)."""

    def __init__(self, plane):
        self.plane = plane

    def mark(self) -> int:
        time.sleep(0.5)  # the log backend writes a moment after the response
        return len(self.plane.audit(stage=None))

    def since(self, mark: int) -> list[dict]:
        time.sleep(0.5)
        return [e for e in self.plane.audit(stage=None)[mark:]
                if e["user"]["username"] == AGENT and e.get("objectRef")]

    def requests(self, mark: int) -> list[tuple[str, str, str]]:
        """(verb, resource, fieldSelector) of each finished request other than a watch."""
        return sorted((e["verb"], _resource(e), _selector(e)) for e in self.since(mark)
                      if e["stage"] == "ResponseComplete" and e["verb"] != "watch")

    def watches_opened(self, mark: int) -> list[tuple[str, str]]:
        return sorted((_resource(e), _selector(e)) for e in self.since(mark)
                      if e["stage"] == "ResponseStarted" and e["verb"] == "watch")


def _resource(event: dict) -> str:
    ref = event["objectRef"]
    return ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")


def _selector(event: dict) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(event["requestURI"]).query).get("fieldSelector", [""])[0]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    plane = started(tmp_path_factory.mktemp("requests-plane"))
    work = tmp_path_factory.mktemp("requests")
    try:
        plane.kubectl("apply", "-k", str(ROOT / "manifests"))
        plane.kubectl("wait", "--for=condition=Established", "crd/nodeenforcementreports.kubectl-dra.io")
        pods = node_pods()
        load(plane, [p.raw for p in pods] + [NODE_OBJECT, node_claim("x", pods)])
        token = plane.service_account_token("kubectl-dra-system", "dra-node-agent")
        kubeconfig = plane.kubeconfig(work / "agent.kubeconfig", token=token, user="dra-node-agent")
        yield plane, work, kubeconfig
    finally:
        plane.stop()


def served(plane, path: str) -> list:
    return [parse_object({"apiVersion": "v1", "kind": "Pod", **p}) for p in plane.request("GET", path)["items"]]


def checkpoint(plane, work: Path, names: list[str]) -> None:
    """The kubelet's checkpoint: each claim prepared for every pod on the node (their real UIDs)."""
    pods = plane.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}")["items"]
    claims = [plane.request("GET", f"/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/{n}") for n in names]
    write_checkpoint(work / "kubelet", [claim_state(c, [p["metadata"]["uid"] for p in pods]) for c in claims])


def test_an_idle_node_costs_its_watches_and_no_request(node):
    plane, work, kubeconfig = node
    audit = Audit(plane)
    pods = served(plane, f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}")
    build_tree(work / "node", pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    checkpoint(plane, work, ["x"])
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(work / "node" / "fs" / "cgroup"), interval=INTERVAL,
                              kubelet_root=str(work / "kubelet"), cdi_dirs=()),
                  KubeOptions(kubeconfig=str(kubeconfig)))
    start = audit.mark()
    agent.start()
    try:
        wait_for("the first report written",
                 lambda: agent.publisher is not None and agent.publisher.current(agent.report), 30)
        wait_for("a watch of each of the three", lambda: len(audit.watches_opened(start)) == 3, 30)
        # the first scan: one list of each, then a watch of each; the report created and written
        lists = [r for r in audit.requests(start) if r[0] == "list"]
        assert lists == [("list", "nodes", f"metadata.name={NODE}"), ("list", "pods", f"spec.nodeName={NODE}"),
                         ("list", "resourceclaims", "metadata.name=x")]
        assert audit.watches_opened(start) == [r[1:] for r in lists]
        assert agent.report.status.summary.claims == 1 and agent.report.status.claims[0].api == "read"

        idle = audit.mark()
        scans = scans_done(agent)
        time.sleep(IDLE_SECONDS)
        assert scans_done(agent) - scans >= IDLE_SECONDS / INTERVAL * 0.6  # the interval scans ran
        assert audit.requests(idle) == []  # not one request: the bound is one a minute
        assert audit.watches_opened(idle) == []

        # a pod goes: the pod watch wakes a scan, read from memory; the report changed, so it is written
        churn = audit.mark()
        plane.request("DELETE", "/api/v1/namespaces/ml/pods/besteffort?gracePeriodSeconds=0")
        wait_for("the pod's deletion in the written report",
                 lambda: agent.report.status.summary.pods == 3 and agent.publisher.current(agent.report), 30)
        made = audit.requests(churn)  # the report once, and the Events of the findings that are new
        assert [r for r in made if r[1] != "events"] == [("patch", "nodeenforcementreports/status", "")]
        assert {r[:2] for r in made if r[1] == "events"} <= {("create", "events")}

        # the claim changes (a label): its watch wakes a scan, from memory, and the report stays as it was
        claim_change = audit.mark()
        scans = scans_done(agent)
        plane.request("PATCH", "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/x",
                      {"metadata": {"labels": {"touched": "yes"}}}, content_type="application/merge-patch+json")
        wait_for("a scan after the claim's change", lambda: scans_done(agent) > scans, 30)
        assert audit.requests(claim_change) == []

        # the node starts using claim y: one list of it, one watch of it
        new_claim = audit.mark()
        load(plane, [node_claim("y", pods)])
        checkpoint(plane, work, ["x", "y"])
        wait_for("claim y in the written report",
                 lambda: agent.report.status.summary.claims == 2 and agent.publisher.current(agent.report), 30)
        made = audit.requests(new_claim)
        assert [r for r in made if r[1] != "events"] == [
            ("list", "resourceclaims", "metadata.name=y"), ("patch", "nodeenforcementreports/status", "")]
        wait_for("a watch of claim y",
                 lambda: audit.watches_opened(new_claim) == [("resourceclaims", "metadata.name=y")], 30)
    finally:
        agent.shutdown()


def scans_done(agent) -> float:
    return agent.metrics.registry.get_sample_value("dra_agent_scan_duration_seconds_count", {"node": NODE}) or 0
