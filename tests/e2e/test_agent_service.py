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
    # the watches see the server go at once; what they hold is then no longer served: a scan lists
    # again, fails, and the last report stays
    until(lambda: agent.source.open_watches() == 0)
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


def until(condition, timeout: float = 10.0) -> bool:
    """Whether ``condition()`` held within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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
    import kubectl_dra.nodescan.node as nodescan
    import node_agent.service as service

    agent, server = agent
    agent.scan_once()
    last = agent.report
    stderr = io.StringIO()
    agent.env = Environment(out=io.StringIO(), err=stderr)
    real = nodescan.scan
    monkeypatch.setattr(nodescan, "scan", lambda *a, **k: (_ for _ in ()).throw(ImportError("libstdc++.so.6: nope")))
    monkeypatch.setattr(service, "MAX_BACKOFF", 0.05)
    with looping(agent) as thread:
        until(lambda: stderr.getvalue().count("scan failed unexpectedly") >= 3)
        assert agent.report is last and agent.healthy() and thread.is_alive()
        text = stderr.getvalue()
        assert text.count("Traceback") == 1 and "this is a bug" in text and "libstdc++.so.6: nope" in text
        assert agent.metrics.errors.labels(NODE, "internal")._value.get() >= 3
        monkeypatch.setattr(nodescan, "scan", real)
        until(lambda: agent.report is not last)
    assert agent.report is not last and agent.report.status.summary.diverged == 1


def sample(agent, name: str, **labels) -> float | None:
    return agent.metrics.registry.get_sample_value(name, {"node": NODE, **labels})


def test_last_publish_says_when_the_report_object_was_last_current(agent):
    """dra_agent_last_publish_timestamp_seconds (the DRANodeAgentNotPublishing alert): 0 before the
    first write, the write's time after it, moved on by a scan whose report is unchanged (the object
    is still current), and left alone when the write fails while scans go on."""
    agent, server = agent
    assert sample(agent, "dra_agent_last_publish_timestamp_seconds") == 0
    before = time.time()
    agent.scan_once()
    written = sample(agent, "dra_agent_last_publish_timestamp_seconds")
    assert server.get("nodeenforcementreports", NODE) is not None and before <= written <= time.time()
    agent.scan_once()  # nothing changed: nothing written, the object is still current
    assert sample(agent, "dra_agent_last_publish_timestamp_seconds") >= written
    server.serve("kubectl-dra.io", [])  # the CRD goes away: the report cannot be written
    agent.publisher = None  # as after a restart: a new publisher writes again
    stuck = sample(agent, "dra_agent_last_publish_timestamp_seconds")
    with pytest.raises(ApiError):
        agent.scan_once()
    assert sample(agent, "dra_agent_last_publish_timestamp_seconds") == stuck
    assert sample(agent, "dra_agent_last_scan_timestamp_seconds") > stuck  # the scan itself went on


def test_a_failed_write_counts_as_one_publish_error_not_also_a_scan_error(agent):
    """Every stage's counter exists from 0 (so the first failure is an increase, which the
    DRANodeAgentScanErrors alert sees), and a failed write counts once, under "publish"."""
    agent, server = agent
    assert [sample(agent, "dra_agent_scan_errors_total", stage=s) for s in ("scan", "publish", "internal")] == [0, 0, 0]
    server.serve("kubectl-dra.io", [])
    agent.config.interval = 0.05
    with looping(agent):
        until(lambda: sample(agent, "dra_agent_scan_errors_total", stage="publish") >= 2)
    assert sample(agent, "dra_agent_scan_errors_total", stage="publish") >= 2
    assert sample(agent, "dra_agent_scan_errors_total", stage="scan") == 0


def test_an_agent_that_does_not_publish_has_no_publish_timestamp(tmp_path, make_apiserver, kubeconfig_for):
    """--no-publish: the series is absent, so the not-publishing alert cannot fire for it."""
    server = make_apiserver([NODE_OBJECT])
    config = AgentConfig(node=NODE, cgroup_root=str(tmp_path), listen="127.0.0.1:0", publish=False)
    agent = Agent(config, KubeOptions(kubeconfig=str(kubeconfig_for(server))))
    assert sample(agent, "dra_agent_last_publish_timestamp_seconds") is None
