"""The agent as a service against the local API server: report object, Events, metrics, outage."""

from __future__ import annotations

import pytest
from httpget import get
from cgroup_tree import build_tree, set_file
from agentpods import NODE, NODE_OBJECT, node_pods

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.errors import ApiError
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


def test_an_unexpected_error_in_a_scan_neither_stops_the_loop_nor_loses_the_report(agent, monkeypatch):
    """A bug in one scan (here a library that cannot load, as grpcio without libstdc++ did in the
    first image) must not crash-loop the DaemonSet: the loop logs it (the traceback once), counts it,
    keeps the last report and recovers when the cause goes."""
    import threading
    import time

    import node_agent.service as service
    from kubectl_dra.env import Environment
    import io

    agent, server = agent
    agent.scan_once()
    last = agent.report
    stderr = io.StringIO()
    agent.env = Environment(out=io.StringIO(), err=stderr)
    real = service.scan
    monkeypatch.setattr(service, "scan", lambda *a, **k: (_ for _ in ()).throw(ImportError("libstdc++.so.6: nope")))
    monkeypatch.setattr(service, "MAX_BACKOFF", 0.05)
    thread = threading.Thread(target=agent.loop, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while stderr.getvalue().count("scan failed unexpectedly") < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agent.report is last and agent.healthy() and thread.is_alive()
    text = stderr.getvalue()
    assert text.count("Traceback") == 1 and "this is a bug" in text and "libstdc++.so.6: nope" in text
    assert agent.metrics.errors.labels(NODE, "internal")._value.get() >= 3
    monkeypatch.setattr(service, "scan", real)
    deadline = time.monotonic() + 10
    while agent.report is last and time.monotonic() < deadline:
        time.sleep(0.05)
    agent.stop.set()
    agent.trigger.set()
    thread.join(timeout=5)
    assert agent.report is not last and agent.report.status.summary.diverged == 1
