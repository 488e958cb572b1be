"""The agent as a service against the local API server: report object, Events, metrics, outage."""

from __future__ import annotations

import io
import threading
import time
from contextlib import contextmanager

import pytest
from httpget import get
from cgroup_tree import build_tree, set_file
from agentpods import NODE, NODE_OBJECT, node_pods

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.env import Environment
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


@contextmanager
def looping(agent):
    """The agent's service loop in a thread, stopped and joined on the way out."""
    thread = threading.Thread(target=agent.loop, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        agent.stop.set()
        agent.trigger.set()
        thread.join(timeout=5)


def until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_service_loop_recovers_after_outage(agent):
    agent, server = agent
    server.stop()
    with looping(agent):
        time.sleep(0.5)
        assert agent.report is None and agent.healthy()
        server.start()
        until(lambda: agent.report is not None)
    assert agent.report is not None and agent.report.status.summary.diverged == 1
    assert server.get("nodeenforcementreports", NODE) is not None


def test_an_unexpected_error_in_a_scan_neither_stops_the_loop_nor_loses_the_report(agent, monkeypatch):
    """A bug in one scan (here a library that cannot load, as grpcio without libstdc++ did in the
    first image) must not crash-loop the DaemonSet: the loop logs it (the traceback once), counts it,
    keeps the last report and recovers when the cause goes."""
    import node_agent.service as service

    agent, server = agent
    agent.scan_once()
    last = agent.report
    stderr = io.StringIO()
    agent.env = Environment(out=io.StringIO(), err=stderr)
    real = service.scan
    monkeypatch.setattr(service, "scan", lambda *a, **k: (_ for _ in ()).throw(ImportError("libstdc++.so.6: nope")))
    monkeypatch.setattr(service, "MAX_BACKOFF", 0.05)
    with looping(agent) as thread:
        until(lambda: stderr.getvalue().count("scan failed unexpectedly") >= 3)
        assert agent.report is last and agent.healthy() and thread.is_alive()
        text = stderr.getvalue()
        assert text.count("Traceback") == 1 and "this is a bug" in text and "libstdc++.so.6: nope" in text
        assert agent.metrics.errors.labels(NODE, "internal")._value.get() >= 3
        monkeypatch.setattr(service, "scan", real)
        until(lambda: agent.report is not last)
    assert agent.report is not last and agent.report.status.summary.diverged == 1
