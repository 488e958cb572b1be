"""The agents' own API priority (manifests/agent/flowcontrol.yaml) on the real v1.37.2 API server.

Installed with `kubectl apply -k manifests/`, the agent's requests are classified into our
FlowSchema and level (the API server's own response headers say which), with the seats the
manifest's comment promises. With a tiny share for that level, a burst from many agent clients is
rejected with 429 while a kube-system ServiceAccount's requests go through; and a real Agent that
is throttled fails its scan with 429 after the client's retries, keeps its last report (in memory
and in the API), counts the failures, backs off 1 s then 2 s, and recovers once the throttle is
lifted. The facts relied on (seat formula, precedence, Retry-After) are in
docs/kubernetes/api-priority.md.

The throttle of the Agent is made without a flood: a seat is held from the moment a request is
dispatched until its handler returns, and a create's handler reads the request body, so a client
that sends a POST's headers and then waits holds one seat of its level. Holding every seat of a
Reject level makes every other request of that level a 429 at once, while Retry-After stays at
1-2 s: the API server doubles it only when 3 x Retry-After requests of the level were rejected
within the last Retry-After seconds, which a flood would keep doing (up to 32 s).
"""

from __future__ import annotations

import http.client
import math
import re
import socket
import ssl
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from agentpods import NODE, NODE_OBJECT, node_pods
from cgroup_tree import build_tree
from clusterobjects import wait_for
from controlplane import started
from loader import load
from test_least_privilege import AGENT, ROOT
from test_real_objects import crds

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.registry import parse_object
from node_agent.service import Agent, AgentConfig

LEVEL = 'priority_level="dra-node-agent"'
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
SERVER_CL = 400 + 200  # --max-requests-inflight + --max-mutating-requests-inflight, the defaults the plane runs with
NODE_PODS = f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}"  # the agent's own list


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """kubectl-dra installed as the README says, the agent's node and pods, and a kube-system
    ServiceAccount that may read pods (kubectl-dra:viewer)."""
    plane = started(tmp_path_factory.mktemp("apf-plane"))
    try:
        plane.kubectl("apply", "-k", str(ROOT / "manifests"))
        plane.kubectl("wait", "--for=condition=Established", "crd/nodeenforcementreports.kubectl-dra.io")
        load(plane, [c for c in crds() if c["metadata"]["name"] != "nodeenforcementreports.kubectl-dra.io"])
        load(plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}])
        load(plane, [p.raw for p in node_pods()] + [NODE_OBJECT])
        plane.request("POST", "/api/v1/namespaces/kube-system/serviceaccounts",
                      {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "apf-probe"}})
        plane.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "apf-probe"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubectl-dra:viewer"},
            "subjects": [{"kind": "ServiceAccount", "name": "apf-probe", "namespace": "kube-system"}]})
        yield Cluster(plane, tmp_path_factory.mktemp("apf"))
    finally:
        plane.stop()


class Cluster:
    def __init__(self, plane, work: Path):
        self.plane, self.work = plane, work
        self.host, port = plane.url.removeprefix("https://").rsplit(":", 1)
        self.port = int(port)
        self.context = ssl.create_default_context(cafile=str(plane.ca_file))
        self.agent_token = plane.service_account_token("kubectl-dra-system", "dra-node-agent")
        self.kube_system_token = plane.service_account_token("kube-system", "apf-probe")

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)

    def get(self, conn, path: str, token: str) -> tuple[int, dict]:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}

    def uid(self, kind: str, name: str) -> str:
        return self.plane.request("GET", f"{FLOWCONTROL}/{kind}/{name}")["metadata"]["uid"]

    def metrics(self, name: str) -> dict[str, float]:
        """One metric of the API server's /metrics (read as the admin, whom the exempt level serves),
        by its label set."""
        text = self.plane.request("GET", "/metrics", raw=True)
        return {m.group(1): float(m.group(2)) for m in re.finditer(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M)}

    def of_level(self, name: str, **labels: str) -> float:
        wanted = [LEVEL, *(f'{k}="{v}"' for k, v in labels.items())]
        return sum(v for k, v in self.metrics(name).items() if all(w in k.split(",") for w in wanted))

    def throttle(self, limit_response: dict) -> int:
        """The agents' level shrunk to 1 share, nothing lent or borrowed; returns its seats once the
        API server's flow control runs with them."""
        self.plane.request("PATCH", f"{FLOWCONTROL}/prioritylevelconfigurations/dra-node-agent",
                           {"spec": {"limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                 "borrowingLimitPercent": 0, "limitResponse": limit_response}}},
                           content_type="application/merge-patch+json")
        seats = expected_seats(self.plane, 1)
        wait_for("the tiny share", lambda: self.of_level("apiserver_flowcontrol_current_limit_seats") == seats,
                 timeout=20, every=0.1)
        return seats

    def restore(self) -> None:
        self.plane.kubectl("apply", "-k", str(ROOT / "manifests"))
        seats = expected_seats(self.plane, 5)
        wait_for("the shipped share", lambda: self.of_level("apiserver_flowcontrol_nominal_limit_seats") == seats,
                 timeout=20, every=0.1)


def expected_seats(plane, ours: int) -> int:
    """NominalCL = ceil(ServerCL * shares / sum of every level's shares), ours counted as ``ours``."""
    levels = plane.request("GET", f"{FLOWCONTROL}/prioritylevelconfigurations")["items"]
    shares = sum(ours if pl["metadata"]["name"] == "dra-node-agent" else
                 (pl["spec"].get("limited") or pl["spec"].get("exempt") or {}).get("nominalConcurrencyShares", 0)
                 for pl in levels)
    return math.ceil(SERVER_CL * ours / shares)


class HeldSeats:
    """Seats of the agents' level held by POSTs whose body never finishes: the API server has
    dispatched them and their handler waits for the body. Closing the sockets ends them."""

    def __init__(self, cluster: Cluster, count: int):
        self.sockets = []
        for _ in range(count):
            sock = cluster.context.wrap_socket(socket.create_connection((cluster.host, cluster.port), timeout=60),
                                               server_hostname=cluster.host)
            sock.sendall((f"POST /apis/events.k8s.io/v1/namespaces/ml/events HTTP/1.1\r\nHost: {cluster.host}\r\n"
                          f"Authorization: Bearer {cluster.agent_token}\r\nContent-Type: application/json\r\n"
                          "Content-Length: 4096\r\n\r\n{").encode())
            self.sockets.append(sock)
        wait_for("held seats", lambda: cluster.of_level("apiserver_flowcontrol_current_executing_seats") >= count,
                 timeout=20, every=0.1)

    def release(self) -> None:
        for sock in self.sockets:
            sock.close()


def test_the_agents_requests_run_in_their_own_level(cluster):
    """Our FlowSchema catches the agent (not service-accounts/workload-low), kube-system's
    ServiceAccounts stay in workload-high, and the level has the seats the manifest says."""
    conn = cluster.connection()
    status, headers = cluster.get(conn, NODE_PODS, cluster.agent_token)
    assert status == 200
    assert headers["x-kubernetes-pf-flowschema-uid"] == cluster.uid("flowschemas", "dra-node-agent")
    assert headers["x-kubernetes-pf-prioritylevel-uid"] == cluster.uid("prioritylevelconfigurations", "dra-node-agent")
    status, headers = cluster.get(conn, NODE_PODS, cluster.kube_system_token)
    assert status == 200
    assert headers["x-kubernetes-pf-flowschema-uid"] == cluster.uid("flowschemas", "kube-system-service-accounts")
    assert headers["x-kubernetes-pf-prioritylevel-uid"] == cluster.uid("prioritylevelconfigurations", "workload-high")
    schema = cluster.plane.request("GET", f"{FLOWCONTROL}/flowschemas/dra-node-agent")
    assert {c["type"]: c["status"] for c in schema["status"]["conditions"]} == {"Dangling": "False"}
    # 5 shares of 250 (the suggested levels' 245 and ours): 12 of the 600 seats, none borrowed, 6 lendable
    assert expected_seats(cluster.plane, 5) == 12
    assert cluster.of_level("apiserver_flowcontrol_nominal_limit_seats") == 12
    assert cluster.of_level("apiserver_flowcontrol_upper_limit_seats") == 12
    assert cluster.of_level("apiserver_flowcontrol_lower_limit_seats") == 6
    assert cluster.of_level("apiserver_flowcontrol_dispatched_requests_total", flow_schema="dra-node-agent") >= 1


class TimedLog:
    """The agent's stderr, each line with the moment it was written."""

    def __init__(self):
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> None:
        self.lines.append((time.monotonic(), text))

    def flush(self) -> None:
        pass


def test_a_throttled_agent_backs_off_keeps_its_report_and_recovers(cluster):
    plane, work = cluster.plane, cluster.work
    items = plane.request("GET", NODE_PODS)["items"]
    pods = [parse_object({"apiVersion": "v1", "kind": "Pod", **p}) for p in items]
    build_tree(work / "node", pods, NodeOptions(hugepage_sizes=[2 << 20, 1 << 30], runtime_hugetlb=True))
    kubeconfig = plane.kubeconfig(work / "agent.kubeconfig", token=cluster.agent_token, user="dra-node-agent")
    log = TimedLog()
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(work / "node" / "fs" / "cgroup"), watch_timeout=1,
                              interval=1, cdi_dirs=()),
                  KubeOptions(kubeconfig=str(kubeconfig)), Environment(err=log))
    agent.connect()
    first = agent.scan_once()
    path = f"/apis/kubectl-dra.io/v1alpha1/nodeenforcementreports/{NODE}"
    stored = plane.request("GET", path)
    assert stored["status"]["summary"]["pods"] == 4

    errors = agent.metrics.registry.get_sample_value
    scan_errors = {"node": NODE, "stage": "scan"}
    assert errors("dra_agent_scan_errors_total", scan_errors) == 0
    # every scan the loop makes: when it began, and what it raised
    scans: list[tuple[float, float, BaseException | None]] = []
    kept: list = []  # the report after each successful scan
    scan = agent.scan_once

    def timed_scan():
        began = time.monotonic()
        try:
            report = scan()
        except BaseException as exc:
            scans.append((began, time.monotonic(), exc))
            raise
        scans.append((began, time.monotonic(), None))
        kept.append(report)
        return report

    agent.scan_once = timed_scan
    cluster.throttle({"type": "Reject", "queuing": None})
    held = HeldSeats(cluster, 3)
    loop = threading.Thread(target=agent.loop)
    try:
        status, headers = cluster.get(cluster.connection(), NODE_PODS, cluster.agent_token)
        assert status == 429 and int(headers["retry-after"]) >= 1
        mark = plane.audit_mark()
        loop.start()
        wait_for("three failed scans in the loop", lambda: len(failed(scans)) >= 3, timeout=45, every=0.1)
        first_failure, *_ = failed(scans)
        # a scan that needs the API fails with the API server's 429, after the client's retries
        assert isinstance(first_failure[2], ApiError) and first_failure[2].status == 429, first_failure
        # 1 + 4 tries of one request, each after the Retry-After the server sent (1 s or more)
        refused = [e for e in plane.requests_since(mark, AGENT) if e["responseStatus"]["code"] == 429
                   and e["verb"] != "watch" and stamp(e) <= time.time() - (time.monotonic() - first_failure[1])]
        uri = refused[-1]["requestURI"]
        tries = [stamp(e) for e in refused if e["requestURI"] == uri][-5:]
        assert len(tries) == 5 and all(b - a >= 0.95 for a, b in zip(tries, tries[1:])), (uri, tries)
        # each failed scan is counted and said, and the loop waits 1 s, then 2 s before the next
        index = scans.index(first_failure)
        backoffs = [scans[i + 1][0] - scans[i][1] for i in (index, index + 1)]
        print(f"\nthrottled: a failed scan took {first_failure[1] - first_failure[0]:.1f} s "
              f"(tries {[round(b - a, 2) for a, b in zip(tries, tries[1:])]} s apart); "
              f"loop backoffs {[round(b, 2) for b in backoffs]} s")
        assert [exc is not None for _, _, exc in scans[index:index + 3]] == [True] * 3
        assert 0.9 <= backoffs[0] <= 1.6 and 1.9 <= backoffs[1] <= 2.6, backoffs
        assert errors("dra_agent_scan_errors_total", scan_errors) == len(failed(scans))
        said = [text for _, text in log.lines if text.startswith("scan failed")]
        assert len(said) == len(failed(scans)) and all("HTTP 429" in t and "keeping the last report" in t for t in said)
        # the last good report stays: scans from the watches' memory may succeed until a watch
        # must be opened again and is refused, and none is replaced by a failed one
        assert agent.report is (kept[-1] if kept else first)
        assert agent.report.status.summary == first.status.summary
        assert plane.request("GET", path)["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    finally:
        held.release()
        cluster.restore()
    # the throttle lifted: the next try succeeds, the report is current again, nothing fails after it
    throttled = agent.report
    agent.trigger.set()
    wait_for("a scan after the throttle", lambda: agent.report is not throttled, timeout=30, every=0.1)
    failed_scans, recovered = errors("dra_agent_scan_errors_total", scan_errors), agent.report
    agent.trigger.set()
    wait_for("a second scan after the throttle", lambda: agent.report is not recovered, timeout=30, every=0.1)
    agent.shutdown()
    loop.join(timeout=30)
    assert not loop.is_alive()
    assert agent.report.status.summary == first.status.summary
    assert errors("dra_agent_scan_errors_total", scan_errors) == failed_scans
    assert plane.request("GET", path)["status"]["summary"] == stored["status"]["summary"]


def test_a_burst_of_agents_is_rejected_while_kube_system_is_served(cluster):
    seats = cluster.throttle({"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}})
    assert seats == 3  # ceil(600 * 1 / 246)
    rejected_before = cluster.of_level("apiserver_flowcontrol_rejected_requests_total")
    agents, burst_seconds = 30, 2.0
    counts: dict[int, int] = {}
    probes: list[tuple[int, float, str]] = []
    lock = threading.Lock()
    go = threading.Barrier(agents + 2, timeout=60)

    def agent_client():
        conn = cluster.connection()
        conn.connect()
        go.wait()
        end = time.monotonic() + burst_seconds
        while time.monotonic() < end:
            status, _ = cluster.get(conn, NODE_PODS, cluster.agent_token)
            with lock:
                counts[status] = counts.get(status, 0) + 1

    def kube_system_client():
        conn = cluster.connection()
        cluster.get(conn, NODE_PODS, cluster.kube_system_token)
        go.wait()
        time.sleep(0.2)  # the burst is on
        end = time.monotonic() + burst_seconds - 0.4
        while time.monotonic() < end:
            began = time.monotonic()
            status, headers = cluster.get(conn, NODE_PODS, cluster.kube_system_token)
            probes.append((status, time.monotonic() - began, headers.get("x-kubernetes-pf-prioritylevel-uid", "")))
            time.sleep(0.05)

    threads = [threading.Thread(target=agent_client) for _ in range(agents)]
    threads.append(threading.Thread(target=kube_system_client))
    try:
        for t in threads:
            t.start()
        go.wait()
        for t in threads:
            t.join(timeout=60)
        rejected = cluster.of_level("apiserver_flowcontrol_rejected_requests_total") - rejected_before
    finally:
        cluster.restore()
    latencies = sorted(p[1] for p in probes)
    print(f"\nburst: {agents} agent clients for {burst_seconds} s against {seats} seats: {counts}; "
          f"kube-system: {len(probes)} requests, latency median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"max {latencies[-1] * 1000:.1f} ms")
    assert set(counts) <= {200, 429}
    assert counts.get(429, 0) >= 10 and counts.get(200, 0) >= 1  # throttled, not shut out
    assert rejected == counts[429]  # every 429 came from our level, none from elsewhere
    workload_high = cluster.uid("prioritylevelconfigurations", "workload-high")
    assert len(probes) >= 5 and all(status == 200 for status, _, _ in probes), probes
    assert {uid for _, _, uid in probes} == {workload_high}
    assert latencies[-1] < 2.0


def failed(scans: list) -> list:
    return [s for s in scans if s[2] is not None]


def stamp(event: dict) -> float:
    return datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
