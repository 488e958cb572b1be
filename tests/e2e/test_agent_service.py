"""The agent as a service against the local API server: report object, Events, metrics, outage."""

from __future__ import annotations

import urllib.request

import pytest
from cgroup_tree import build_tree, set_file
from agentpods import NODE, NODE_OBJECT, node_pods

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cli.options import KubeOptions
from kubectl_dra.errors import ApiError
from node_agent.publish import REPORTS_PATH
from node_agent.service import Agent, AgentConfig

@pytest.fixture
def agent(tmp_path, make_apiserver, kubeconfig_for):
    pods = node_pods()
    dirs = build_tree(tmp_path, pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30]))
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))  # the planted divergence
    server = make_apiserver([p.raw for p in pods] + [NODE_OBJECT], served={"kubectl-dra.io": ["v1alpha1"]})
    kube = KubeOptions(kubeconfig=str(kubeconfig_for(server)))
    config = AgentConfig(node=NODE, cgroup_root=str(tmp_path / "fs" / "cgroup"), listen="127.0.0.1:0", interval=0.2)
    agent = Agent(config, kube)
    agent.connect()
    yield agent, server
    if agent.server:
        agent.server.shutdown()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_report_object_events_and_dedup(agent):
    agent, server = agent
    report = agent.scan_once()
    assert report.status.summary.diverged == 1
    stored = server.get("nodeenforcementreports", NODE)
    assert stored["status"]["summary"] == {"pods": 4, "matched": 3, "diverged": 1, "unknown": 0}
    assert stored["metadata"]["labels"] == {"kubectl-dra.io/node-name": NODE}
    assert stored["metadata"]["ownerReferences"][0]["uid"] == NODE_OBJECT["metadata"]["uid"]
    events = [r for r in server.requests if r.method == "POST" and r.resource == "events"]
    assert len(events) == 1
    event = events[0].body
    assert (event["reason"], event["reportingController"], event["reportingInstance"], event["type"]) == (
        "CgroupDivergence", "kubectl-dra.io/node-agent", NODE, "Warning")
    assert event["regarding"]["name"] == "burstable" and "encoder memory.max" in event["note"]
    writes = len([r for r in server.requests if r.method in ("POST", "PATCH", "PUT")])
    agent.scan_once()  # nothing changed: no write, no second Event
    assert len([r for r in server.requests if r.method in ("POST", "PATCH", "PUT")]) == writes
    lists = {r.resource: r.query.get("fieldSelector") for r in server.list_requests()}
    assert lists == {"pods": f"spec.nodeName={NODE}", "nodes": f"metadata.name={NODE}"}


def test_http_endpoints_and_metrics(agent):
    agent, _ = agent
    base = "http://127.0.0.1:%d" % agent.start_http().server_address[1]
    assert get(base + "/readyz")[0] == 503
    agent.scan_once()
    assert get(base + "/readyz") == (200, "ok\n")
    assert get(base + "/healthz")[0] == 200
    code, report = get(base + "/report")
    assert code == 200 and '"diverged": 1' in report
    _, metrics = get(base + "/metrics")
    assert 'dra_agent_pods{node="worker-1",verdict="Diverged"} 1.0' in metrics
    assert ('dra_agent_pod_divergences{cause="DRAAmountMissing",namespace="ml",node="worker-1",pod="burstable",'
            'severity="error",uid="22222222-2222-2222-2222-222222222222"} 1.0') in metrics
    assert "dra_agent_scan_duration_seconds_count" in metrics and "dra_agent_build_info" in metrics
    assert "dra_agent_resident_memory_bytes" in metrics


def test_survives_api_server_outage(agent):
    agent, server = agent
    base = "http://127.0.0.1:%d" % agent.start_http().server_address[1]
    agent.scan_once()
    server.stop()
    with pytest.raises(ApiError):
        agent.scan_once()
    code, report = get(base + "/report")  # the last report is still served
    assert code == 200 and '"diverged": 1' in report
    assert 'dra_agent_scan_errors_total' in get(base + "/metrics")[1]
    server.start()  # the API server comes back on the same address
    again = agent.scan_once()
    assert again.status.summary.diverged == 1


def test_service_loop_recovers_after_outage(agent):
    import threading
    import time

    agent, server = agent
    server.stop()
    thread = threading.Thread(target=agent.loop, daemon=True)
    thread.start()
    time.sleep(0.5)
    assert agent.report is None and agent.healthy()
    server.start()
    deadline = time.monotonic() + 10
    while agent.report is None and time.monotonic() < deadline:
        time.sleep(0.1)
    agent.stop.set()
    agent.trigger.set()
    thread.join(timeout=5)
    assert agent.report is not None and agent.report.status.summary.diverged == 1
    assert server.get("nodeenforcementreports", NODE) is not None


def test_missing_crd_is_named(tmp_path, make_apiserver, kubeconfig_for):
    pods = node_pods()
    build_tree(tmp_path, pods, NodeOptions())
    server = make_apiserver([p.raw for p in pods] + [NODE_OBJECT])
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(tmp_path / "fs" / "cgroup")),
                  KubeOptions(kubeconfig=str(kubeconfig_for(server))))
    agent.connect()
    with pytest.raises(ApiError, match=r"NodeEnforcementReport CRD \(nodeenforcementreports.kubectl-dra.io\) is "
                                       r"not installed: kubectl apply -f manifests/agent/crd.yaml"):
        agent.scan_once()
    assert agent.report is not None  # the scan itself succeeded and is served
