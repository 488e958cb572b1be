"""scripts/bench_agents.py's arithmetic without a control plane: the kubelets' traffic model
(docs/kubernetes/kubelet-api-traffic.md §4), the extrapolation to a cluster, the API server CPU per
agent, and how the audit log is counted per agent (watches apart), so a wrong formula fails here
rather than in a quoted figure."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_agents", ROOT / "scripts" / "bench_agents.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("lease, fraction, report, per_minute", [
    (40, 0.25, 300, 6.2),  # v1.37.2 defaults: a lease PUT every 10 s, a status PATCH every 5 min
    (40, 0.25, 60, 7.0),  # NodeStatusReportFrequency 1 min
    (60, 0.25, 300, 4.2),  # a 60 s lease: renewed every 15 s
    (40, 0.5, 300, 3.2),
])
def test_kubelet_requests_per_minute(lease, fraction, report, per_minute):
    assert bench.kubelet_requests_per_minute(lease, fraction, report) == pytest.approx(per_minute)


def test_the_default_model_is_the_upstream_defaults():
    assert bench.kubelet_requests_per_minute() == pytest.approx(6.2)


@pytest.mark.parametrize("agent, nodes, agent_s, kubelet_s, ratio, share", [
    (10.0, 5000, 5000 * 10 / 60, 5000 * 6.2 / 60, 10 / 6.2, 10 / 16.2),  # the GPU node: ~833 req/s
    (10.0, 1000, 1000 * 10 / 60, 1000 * 6.2 / 60, 10 / 6.2, 10 / 16.2),
    (1.0, 5000, 5000 / 60, 5000 * 6.2 / 60, 1 / 6.2, 1 / 7.2),  # the goal: at most one request a minute
    (0.0, 5000, 0.0, 5000 * 6.2 / 60, 0.0, 0.0),
])
def test_extrapolation_beside_the_kubelets(agent, nodes, agent_s, kubelet_s, ratio, share):
    got = bench.extrapolate(agent, nodes)
    assert got["nodes"] == nodes
    assert got["agent_per_s"] == pytest.approx(agent_s)
    assert got["kubelet_per_s"] == pytest.approx(kubelet_s)
    assert got["ratio"] == pytest.approx(ratio)
    assert got["share"] == pytest.approx(share)


def test_kubelets_at_5000_nodes():
    assert bench.extrapolate(0.0, 5000)["kubelet_per_s"] * 60 == pytest.approx(5000 * (6 + 0.2))


@pytest.mark.parametrize("count, agents, minutes, per", [(120, 20, 2, 3.0), (50, 50, 1, 1.0), (3, 2, 0.5, 3.0)])
def test_per_node_per_minute(count, agents, minutes, per):
    assert bench.per_node_per_minute(count, agents, minutes) == pytest.approx(per)


@pytest.mark.parametrize("agents, minutes", [(0, 1), (5, 0)])
def test_per_node_per_minute_refuses_an_empty_window(agents, minutes):
    with pytest.raises(ValueError):
        bench.per_node_per_minute(10, agents, minutes)


@pytest.mark.parametrize("with_s, with_min, base_s, base_min, agents, per_agent", [
    (12.0, 2.0, 2.0, 1.0, 5, 0.8),  # rates are compared, not totals: 6 s/min - 2 s/min over 5 agents
    (6.0, 1.0, 6.0, 1.0, 10, 0.0),
    (3.0, 1.0, 4.0, 1.0, 1, -1.0),  # noise shows as noise, not clamped
])
def test_cpu_per_agent(with_s, with_min, base_s, base_min, agents, per_agent):
    assert bench.cpu_per_agent(with_s, with_min, base_s, base_min, agents) == pytest.approx(per_agent)


def event(uid, verb, stage, received, ended=None, audit_id=None):
    return {"auditID": audit_id or f"{uid}-{verb}-{received}", "stage": stage, "verb": verb,
            "user": {"username": bench.AGENT_USER, "uid": uid},
            "requestReceivedTimestamp": f"2026-11-27T11:00:{received:02d}.000000Z",
            "stageTimestamp": f"2026-11-27T11:00:{ended if ended is not None else received:02d}.500000Z"}


def at(second):
    return bench._when(f"2026-11-27T11:00:{second:02d}.000000Z")


def test_audit_counts_per_agent_with_watches_apart():
    events = [
        event("a", "list", "ResponseComplete", 10), event("a", "list", "ResponseComplete", 11),
        event("a", "get", "ResponseComplete", 12), event("a", "patch", "ResponseComplete", 13),
        event("a", "create", "ResponseComplete", 14), event("a", "update", "ResponseComplete", 15),
        event("a", "list", "ResponseComplete", 5),  # before the window
        event("a", "list", "ResponseComplete", 40),  # after it
        event("a", "watch", "ResponseStarted", 2, audit_id="w1"),  # opened before, still open at the end
        event("a", "watch", "ResponseStarted", 3, audit_id="w2"),  # opened before, ended inside
        event("a", "watch", "ResponseComplete", 3, ended=20, audit_id="w2"),
        event("a", "watch", "ResponseStarted", 21, audit_id="w3"),  # re-opened inside, open at the end
        event("b", "watch", "ResponseStarted", 22, audit_id="w4"),
        event("b", "watch", "ResponseComplete", 22, ended=25, audit_id="w4"),  # opened and ended inside
        event("admin", "list", "ResponseComplete", 12),  # not an agent
        event("b", "list", "ResponseStarted", 12),  # only a request's completion counts
    ]
    per = bench.count_audit(events, {"a", "b", "c"}, at(10), at(30))
    assert per == {
        "a": {"list": 2, "get": 1, "write": 3, "other": 0, "watch_opens": 1, "watches_open": 2},
        "b": {"list": 0, "get": 0, "write": 0, "other": 0, "watch_opens": 1, "watches_open": 0},
        "c": {"list": 0, "get": 0, "write": 0, "other": 0, "watch_opens": 0, "watches_open": 0},
    }
    summary = bench.summarize(per, minutes=0.5)
    assert summary["list"] == pytest.approx(2 / 3 / 0.5)
    assert summary["write"] == pytest.approx(3 / 3 / 0.5)
    assert summary["requests"] == pytest.approx(6 / 3 / 0.5)  # watches are not requests here
    assert summary["watch_opens"] == pytest.approx(2 / 3 / 0.5)
    assert summary["watches_open"] == pytest.approx(2 / 3)  # a count at the end, not a rate


@pytest.mark.parametrize("ms, nodes, cores", [(20.0, 5000, 20 * 5000 / 60_000), (60.0, 1000, 1.0), (0.0, 5000, 0.0)])
def test_apiserver_cores_at_a_cluster_size(ms, nodes, cores):
    assert bench.apiserver_cores(ms, nodes) == pytest.approx(cores)


@pytest.mark.parametrize("with_agents, baseline, agents, per", [
    (203, 3, 200, 1.0),  # one connection per agent over HTTP/2
    (1403, 3, 200, 7.0),  # HTTP/1.1: six watches and the requests' own
    (800.0, 600.0, 200, 1.0),  # MiB of resident memory
])
def test_per_agent_levels(with_agents, baseline, agents, per):
    assert bench.per_agent(with_agents, baseline, agents) == pytest.approx(per)


def test_per_agent_refuses_no_agents():
    with pytest.raises(ValueError):
        bench.per_agent(1, 0, 0)


@pytest.mark.parametrize("watches, seconds, per_minute", [
    (6, 300, 0.8),  # the "about 1.3 opens per node a minute" is 10 watches: 10 x 60 / 450
    (10, 300, 10 * 60 / 450),
    (1, 60, 60 / 90),
])
def test_watch_opens_from_the_timeout_window(watches, seconds, per_minute):
    assert bench.watch_opens_per_minute(watches, seconds) == pytest.approx(per_minute)


def test_held_figures_at_scale_beside_one_kubelet_connection_each():
    per_node = {"connections": 1.0, "watches": 6.0, "watch_opens_per_min": 0.8, "bytes_per_min": 1200.0,
                "apiserver_mib": 0.5, "apiserver_cpu_ms": 2.0}
    got = bench.at_scale(per_node, 5000)
    assert got["connections"] == 5000 and got["kubelet_connections"] == 5000
    assert got["watches"] == 30000
    assert got["watch_opens_per_s"] == pytest.approx(5000 * 0.8 / 60)  # about 67 a second
    assert got["kubelet_watches"] == 15000
    assert got["kubelet_watch_opens_per_s"] == pytest.approx(5000 * 3 * 60 / 450 / 60)  # about 33 a second
    assert got["bytes_per_s"] == pytest.approx(100_000)
    assert got["apiserver_gib"] == pytest.approx(5000 * 0.5 / 1024)
    assert got["apiserver_cores"] == pytest.approx(5000 * 2.0 / 60_000)
