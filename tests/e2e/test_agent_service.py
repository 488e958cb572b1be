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
