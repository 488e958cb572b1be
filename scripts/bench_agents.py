"""What N node agents cost the real API server, and that cost extrapolated to 1,000 and 5,000 nodes.

A real control plane (tests/cluster/controlplane.py) gets the manifests, N Nodes and, per node,
pods bound by ``spec.nodeName`` (no scheduler, no kubelet), each with its own ResourceClaim
allocated on that node and reserved for it; each node has a cgroup tree and a kubelet DRA
checkpoint on disk. N real ``node_agent.service.Agent`` instances then run in this one process
(``Agent.start()``: daemon threads), each with its own static token for the agent's
ServiceAccount name (same username, so the same RBAC and flow schema; a distinct audit ``uid``
per agent). Only the Agent's public methods are used, so ``--agent-tree`` can measure another
checkout of the agent (its code and its manifests) with the same harness.

Windows of ``--minutes`` each, in order: baseline idle and baseline churn (no agents), then the
agents start and settle, then idle and churn with agents. Churn: every minute, one pod per node
is deleted and created again by the admin (whose requests are not counted), its claim's
``reservedFor``, checkpoint and cgroup directory follow, as a kubelet and scheduler would make them.

Counted: requests from the API server's audit log (per agent by user uid; watches are counted
apart, as opens and as streams open at the window's end, beside the re-opens the watch timeout
predicts); bytes received and sent by the agents (decoded HTTP, headers and bodies: libcurl's own
count for the agent's HTTP/2 session, the TLS sockets of this process for an agent on the
official client, threads of the bench itself excluded); the API server's CPU (/proc/<pid>/stat
utime+stime) with agents minus the baseline window of the same kind, per agent; at each window's
end the TCP connections the API server has accepted on its port and this process's connections
to it, and the API server's resident memory, with agents minus without, per agent. The windows
with agents last 10 minutes by default, so the 5-10 minute re-opens of the watches fall inside.
Usage:

    scripts/bench_agents.py [--agents 50] [--minutes 10] [--baseline-minutes 2] [--pods-per-node 4]
                            [--settle 20] [--agent-tree PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_SIZES = (1000, 5000)
NAMESPACE = "bench"
AGENT_USER = "system:serviceaccount:kubectl-dra-system:dra-node-agent"
AGENT_GROUPS = "system:serviceaccounts,system:serviceaccounts:kubectl-dra-system,system:authenticated"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})

# kubelet v1.37.2 defaults (docs/kubernetes/kubelet-api-traffic.md, with upstream file:line)
NODE_LEASE_DURATION_S = 40  # pkg/kubelet/apis/config/v1beta1/defaults.go:150
LEASE_RENEW_FRACTION = 0.25  # pkg/kubelet/kubelet.go:237 nodeLeaseRenewIntervalFraction
NODE_STATUS_REPORT_S = 300  # defaults.go:141: a status PATCH without a change every 5 minutes
KUBELET_WATCHES = 3  # at least: its pods, its Node, Services (docs/kubernetes/kubelet-api-traffic.md §3; more
# with each ConfigMap and Secret its pods mount)


# -- the model: pure arithmetic, checked by tests/unit/test_bench_agents.py ------------------------

def kubelet_requests_per_minute(lease_duration_s: float = NODE_LEASE_DURATION_S,
                                renew_fraction: float = LEASE_RENEW_FRACTION,
                                status_report_s: float = NODE_STATUS_REPORT_S) -> float:
    """One idle kubelet's writes a minute: a lease PUT every ``renew_fraction x lease_duration``
    seconds, a node status PATCH every ``status_report_s`` (its 10 s status check reads its own
    informer's cache, and writes only on change). Its watches (pods, its Node, Services) are apart."""
    return 60 / (lease_duration_s * renew_fraction) + 60 / status_report_s


def per_node_per_minute(count: float, agents: int, minutes: float) -> float:
    if agents <= 0 or minutes <= 0:
        raise ValueError("agents and minutes must be positive")
    return count / agents / minutes


def cpu_per_agent(with_agents_s: float, with_minutes: float, baseline_s: float, baseline_minutes: float,
                  agents: int) -> float:
    """API server CPU seconds a minute that one agent adds: the rate with agents minus the rate of
    the baseline window of the same kind, shared by the agents."""
    return (with_agents_s / with_minutes - baseline_s / baseline_minutes) / agents


def extrapolate(agent_per_node_min: float, nodes: int, kubelet_per_node_min: float | None = None) -> dict:
    """At ``nodes`` nodes: the agents' and the kubelets' requests a second, the ratio agent/kubelet,
    and the agents' share of the two together."""
    kubelet = kubelet_requests_per_minute() if kubelet_per_node_min is None else kubelet_per_node_min
    agent_s, kubelet_s = agent_per_node_min * nodes / 60, kubelet * nodes / 60
    return {"nodes": nodes, "agent_per_s": agent_s, "kubelet_per_s": kubelet_s,
            "ratio": agent_s / kubelet_s if kubelet_s else float("inf"),
            "share": agent_s / (agent_s + kubelet_s) if agent_s + kubelet_s else 0.0}


def apiserver_cores(cpu_ms_per_agent_minute: float, nodes: int) -> float:
    """CPU cores of the API server that ``nodes`` agents keep busy."""
    return cpu_ms_per_agent_minute * nodes / 60_000


def per_agent(with_agents: float, baseline: float, agents: int) -> float:
    """What one agent adds to a level the server holds (open connections, resident memory): the
    level with agents minus the level without, shared by the agents."""
    if agents <= 0:
        raise ValueError("agents must be positive")
    return (with_agents - baseline) / agents


def watch_opens_per_minute(watches: float, stream_seconds: float = 300.0) -> float:
    """Watch opens a minute that ``watches`` open watches cost in the steady state: each stream
    asks for a timeout drawn uniformly from [T, 2T) (client-go's reflector, and the agent's
    ``--watch-timeout`` T), then is opened again, so one watch opens 60 / 1.5T times a minute."""
    if stream_seconds <= 0:
        raise ValueError("stream_seconds must be positive")
    return watches * 60 / (1.5 * stream_seconds)


def at_scale(per_node: dict, nodes: int) -> dict:
    """Per-node figures (connections, watches, watch opens and bytes a minute, API server memory
    and CPU) at ``nodes`` nodes, beside the kubelets' one connection and at least three watches
    each: connections and watches held; opens and bytes a second; GiB and cores of the API server."""
    return {"nodes": nodes,
            "connections": per_node["connections"] * nodes, "kubelet_connections": nodes,
            "watches": per_node["watches"] * nodes, "kubelet_watches": KUBELET_WATCHES * nodes,
            "watch_opens_per_s": per_node["watch_opens_per_min"] * nodes / 60,
            "kubelet_watch_opens_per_s": watch_opens_per_minute(KUBELET_WATCHES) * nodes / 60,
            "bytes_per_s": per_node["bytes_per_min"] * nodes / 60,
            "apiserver_gib": per_node["apiserver_mib"] * nodes / 1024,
            "apiserver_cores": apiserver_cores(per_node["apiserver_cpu_ms"], nodes)}


def _when(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def count_audit(events: list[dict], agents: set[str], start: float, end: float) -> dict:
    """Per agent (audit ``user.uid`` in ``agents``) the requests received in [start, end): lists,
    gets, writes, others, watch opens; and the watches open at ``end``. ``events`` are every
    audit event (ResponseStarted marks a watch's open, ResponseComplete its end)."""
    per = {a: {"list": 0, "get": 0, "write": 0, "other": 0, "watch_opens": 0, "watches_open": 0} for a in agents}
    started, ended = {}, set()
    for e in events:
        uid = e.get("user", {}).get("uid")
        if uid not in agents:
            continue
        received = _when(e["requestReceivedTimestamp"])
        if e["verb"] == "watch":
            if e["stage"] == "ResponseStarted":
                started[e["auditID"]] = (uid, received)
                if start <= received < end:
                    per[uid]["watch_opens"] += 1
            elif e["stage"] == "ResponseComplete" and _when(e["stageTimestamp"]) < end:
                ended.add(e["auditID"])
            continue
        if e["stage"] != "ResponseComplete" or not start <= received < end:
            continue
        kind = "list" if e["verb"] == "list" else "get" if e["verb"] == "get" else \
            "write" if e["verb"] in WRITE_VERBS else "other"
        per[uid][kind] += 1
    for audit_id, (uid, received) in started.items():
        if received < end and audit_id not in ended:
            per[uid]["watches_open"] += 1
    return per


def summarize(per: dict, minutes: float) -> dict:
    """Per node a minute over every agent: lists, gets, writes, others, watch opens, and the
    non-watch requests together; watches open at the end, per node (not a rate)."""
    n = len(per)
    out = {k: per_node_per_minute(sum(p[k] for p in per.values()), n, minutes)
           for k in ("list", "get", "write", "other", "watch_opens")}
    out["requests"] = out["list"] + out["get"] + out["write"] + out["other"]
    out["watches_open"] = sum(p["watches_open"] for p in per.values()) / n
    return out


# -- the harness -------------------------------------------------------------------------------------

def _cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def established(pid: int, *, local_port: int | None = None, remote_port: int | None = None) -> int:
    """The process's established TCP connections on ``local_port`` (a server's own port: the
    connections it accepted) or to ``remote_port`` (the connections it made)."""
    return sum(1 for c in psutil.Process(pid).net_connections(kind="tcp")
               if c.status == psutil.CONN_ESTABLISHED
               and (local_port is not None and c.laddr and c.laddr.port == local_port
                    or remote_port is not None and c.raddr and c.raddr.port == remote_port))


def levels(plane) -> dict:
    """What the API server holds now: connections accepted on its port, its resident memory, and
    this process's connections to it (the agents'; the admin's requests close theirs)."""
    import os

    pid = next(p.popen.pid for p in plane.processes if p.name == "kube-apiserver")
    port = int(plane.url.rsplit(":", 1)[1])
    return {"server_connections": established(pid, local_port=port),
            "apiserver_rss_mib": psutil.Process(pid).memory_info().rss / 2**20,
            "client_connections": established(os.getpid(), remote_port=port)}


class ByteMeter:
    """Decrypted bytes through every TLS socket of this process, except in the bench's own threads
    (the admin's churn, the set-up): what the agents receive and send, HTTP headers included."""

    def __init__(self):
        import ssl
        import threading

        self.received = self.sent = 0
        self.sessions: list = []  # the agents' sessions that count their own bytes
        self.excluded: set[int] = set()
        self._lock = threading.Lock()
        meter, recv_into, recv, send = self, ssl.SSLSocket.recv_into, ssl.SSLSocket.recv, ssl.SSLSocket.send

        def counted_recv_into(sock, buffer, nbytes=0, flags=0):
            n = recv_into(sock, buffer, nbytes, flags)
            meter._add("received", n)
            return n

        def counted_recv(sock, buflen=1024, flags=0):
            data = recv(sock, buflen, flags)
            meter._add("received", len(data))
            return data

        def counted_send(sock, data, flags=0):
            n = send(sock, data, flags)
            meter._add("sent", n)
            return n

        ssl.SSLSocket.recv_into, ssl.SSLSocket.recv, ssl.SSLSocket.send = counted_recv_into, counted_recv, counted_send

    def _add(self, which: str, n: int) -> None:
        import threading

        if threading.get_ident() in self.excluded:
            return
        with self._lock:
            setattr(self, which, getattr(self, which) + n)

    def exclude_this_thread(self) -> None:
        import threading

        self.excluded.add(threading.get_ident())

    def snapshot(self) -> tuple[int, int]:
        """The TLS sockets' bytes, plus what the agents' libcurl sessions counted (libcurl's own
        OpenSSL is out of this meter's reach): decoded bytes, headers included."""
        with self._lock:
            received, sent = self.received, self.sent
        for session in self.sessions:
            received += getattr(session, "received", 0)
            sent += getattr(session, "sent", 0)
        return received, sent


def node_name(i: int) -> str:
    return f"bench-node-{i:04d}"


def node_objects(i: int, pods_per_node: int) -> list[dict]:
    """A Ready Node, its pods and one allocated claim per pod, reserved for it: what a DRA GPU
    node holds (tests/cluster/gpunode.py)."""
    from gpunode import gpu_node_objects

    return gpu_node_objects(node_name(i), NAMESPACE, pods_per_node)


class Fleet:
    """The cluster side of the bench: objects, node files, churn; every request as the admin."""

    def __init__(self, plane, work: Path, agents: int, pods_per_node: int):
        self.plane, self.work, self.n, self.pods_per_node = plane, work, agents, pods_per_node

    def load(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from loader import load

        load(self.plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: load(self.plane, node_objects(i, self.pods_per_node)), range(self.n)))
        for i in range(self.n):
            self.write_node_files(i)

    def _pods(self, node: str) -> list[dict]:
        return self.plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?fieldSelector=spec.nodeName%3D{node}")["items"]

    def _claims(self, node: str) -> list[dict]:
        return self.plane.request(
            "GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims?labelSelector=bench-node%3D{node}")["items"]

    def root(self, i: int) -> Path:
        return self.work / "nodes" / node_name(i)

    def write_node_files(self, i: int) -> None:
        """The node's cgroup tree and DRA checkpoint for its pods and claims as the API holds them."""
        from gpunode import write_node_files

        node = node_name(i)
        write_node_files(self.root(i), self._pods(node), self._claims(node))

    def churn_one(self, i: int, generation: int) -> None:
        """Pod 0 of node i deleted and created again (a new UID), its claim reserved for the new pod,
        the node's files rewritten: as a Deployment, the scheduler and the kubelet would do it."""
        import copy

        node = node_name(i)
        name, claim_name = f"{node}-p0", f"{node}-c0"
        base = f"/api/v1/namespaces/{NAMESPACE}/pods"
        old = self.plane.request("GET", f"{base}/{name}")
        self.plane.request("DELETE", f"{base}/{name}", {"gracePeriodSeconds": 0})  # no kubelet to confirm a grace
        body = copy.deepcopy(old)
        for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            body["metadata"].pop(key, None)
        body["metadata"].setdefault("labels", {})["generation"] = str(generation)
        status = body.pop("status")
        created = self.plane.request("POST", base, body)
        created["status"] = status
        self.plane.request("PUT", f"{base}/{name}/status", created)
        path = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{claim_name}"
        current = self.plane.request("GET", path)
        current["status"]["reservedFor"] = [{"resource": "pods", "name": name, "uid": created["metadata"]["uid"]}]
        self.plane.request("PUT", f"{path}/status", current)
        self.write_node_files(i)


def run_churn(fleet: Fleet, meter: ByteMeter, seconds: float, stop) -> int:
    """One pod per node per minute, spread evenly; returns how many were churned."""
    meter.exclude_this_thread()
    began, done = time.monotonic(), 0
    step = 60.0 / fleet.n
    while time.monotonic() - began < seconds and not stop.is_set():
        due = began + done * step
        if stop.wait(max(0.0, due - time.monotonic())):
            break
        if time.monotonic() - began >= seconds:
            break
        fleet.churn_one(done % fleet.n, done // fleet.n + 1)
        done += 1
    return done


def window(plane, fleet, meter, minutes: float, churn: bool) -> dict:
    """Measure one window: wall bounds, API server and etcd CPU, bytes, this process's CPU."""
    import resource
    import threading

    pids = {p.name: p.popen.pid for p in plane.processes}
    stop = threading.Event()
    churned = []
    churner = threading.Thread(target=lambda: churned.append(run_churn(fleet, meter, minutes * 60, stop)),
                               daemon=True) if churn else None
    cpu0 = {k: _cpu_seconds(pids[k]) for k in ("kube-apiserver", "etcd")}
    bytes0 = meter.snapshot()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.time()
    if churner:
        churner.start()
    time.sleep(minutes * 60)
    end = time.time()
    stop.set()
    if churner:
        churner.join(timeout=60)
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    bytes1 = meter.snapshot()
    cpu1 = {k: _cpu_seconds(pids[k]) for k in ("kube-apiserver", "etcd")}
    return {"start": start, "end": end, "minutes": (end - start) / 60, **levels(plane),
            "cpu": {k: cpu1[k] - cpu0[k] for k in cpu0},
            "received": bytes1[0] - bytes0[0], "sent": bytes1[1] - bytes0[1],
            "bench_cpu": (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime),
            "churned": churned[0] if churned else 0}


def all_audit_events(plane) -> list[dict]:
    time.sleep(1.0)  # the log backend writes a moment after the response
    return plane.audit(stage=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=50, help="node agents (and nodes) at once, in this process")
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="length of each window with agents (at least 10 to see the 5-10 minute re-opens of watches)")
    parser.add_argument("--baseline-minutes", type=float, default=2.0, help="length of each window without agents")
    parser.add_argument("--pods-per-node", type=int, default=4, help="pods per node, each with its own claim")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after the agents start, before measuring")
    parser.add_argument("--agent-tree", help="a checkout whose kubectl_dra/ and node_agent/ are measured")
    parser.add_argument("--json", action="store_true", help="only the JSON line (it is always printed last)")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.minutes <= 0 or args.baseline_minutes <= 0 or args.pods_per_node < 1:
        parser.error("--agents and --pods-per-node must be at least 1, --minutes and --baseline-minutes positive")
    tree = Path(args.agent_tree).resolve() if args.agent_tree else ROOT
    if not (tree / "node_agent" / "service.py").is_file():
        parser.error(f"--agent-tree {tree}: no node_agent/service.py there")
    if not (tree / "manifests" / "kustomization.yaml").is_file():
        parser.error(f"--agent-tree {tree}: no manifests/kustomization.yaml there")
    sys.path[:0] = [str(tree), str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]
    say = (lambda *a, **k: None) if args.json else print
    import tempfile

    from controlplane import BIN, ControlPlane, binaries_present

    if not binaries_present():
        print(f"error: the control plane binaries are missing in {BIN} (scripts/build-control-plane)", file=sys.stderr)
        return 3
    import io

    from kubectl_dra.env import Environment
    from kubectl_dra.kube.options import KubeOptions
    from node_agent.service import Agent, AgentConfig

    meter = ByteMeter()
    meter.exclude_this_thread()
    tokens = tuple((f"bench-agent-token-{i}", AGENT_USER, f"bench-agent-{i}", AGENT_GROUPS) for i in range(args.agents))
    uids = {t[2] for t in tokens}
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        work = Path(tmp)
        began = time.monotonic()
        plane = ControlPlane(work / "plane", extra_tokens=tokens).start()
        try:
            plane.kubectl("apply", "-k", str(tree / "manifests"))  # the measured tree's RBAC and flow schema
            plane.kubectl("wait", "--for=condition=Established", "crd/nodeenforcementreports.kubectl-dra.io")
            fleet = Fleet(plane, work, args.agents, args.pods_per_node)
            fleet.load()
            say(f"agents at scale: {args.agents} agents from {tree}, {args.pods_per_node} pods and claims per node, "
                f"windows of {args.minutes:g} min (set-up {time.monotonic() - began:.0f} s)")
            base_idle = window(plane, fleet, meter, args.baseline_minutes, churn=False)
            base_churn = window(plane, fleet, meter, args.baseline_minutes, churn=True)
            agents, errors = [], []
            for i, (token, *_rest) in enumerate(tokens):
                kubeconfig = plane.kubeconfig(work / f"agent-{i}.kubeconfig", token=token, user=f"agent-{i}")
                root = fleet.root(i)
                err = io.StringIO()
                errors.append(err)
                agents.append(Agent(AgentConfig(node=node_name(i), cgroup_root=str(root / "fs" / "cgroup"),
                                                kubelet_root=str(root / "kubelet"), cdi_dirs=(), interval=60,
                                                publish=True),
                                    KubeOptions(kubeconfig=str(kubeconfig)), env=Environment(err=err)))
            for agent in agents:
                agent.start()
            meter.sessions = [a.session for a in agents if hasattr(getattr(a, "session", None), "received")]
            time.sleep(args.settle)
            reported = sum(a.report is not None for a in agents)
            summaries = [a.report.status.summary for a in agents if a.report is not None]
            idle = window(plane, fleet, meter, args.minutes, churn=False)
            churn = window(plane, fleet, meter, args.minutes, churn=True)
            for agent in agents:
                agent.shutdown()
            events = all_audit_events(plane)
        finally:
            plane.stop()
    result = {"agents": args.agents, "pods_per_node": args.pods_per_node, "minutes": args.minutes,
              "baseline_minutes": args.baseline_minutes, "libcurl_sessions": len(meter.sessions),
              "watch_timeout_s": getattr(agents[0].config, "watch_timeout", 300.0),
              "agent_tree": str(tree), "reported": reported,
              "matched_pods": sum(s.matched for s in summaries), "pods": sum(s.pods for s in summaries),
              "agent_stderr_lines": sum(len(e.getvalue().splitlines()) for e in errors),
              "agent_stderr_sample": sorted({re.sub(r"bench-node-\d+", "bench-node-N", line.replace(str(work), "<work>"))
                                             for e in errors for line in e.getvalue().splitlines()
                                             if line and not line[0].isspace()})[:5],
              "kubelet_per_node_min": kubelet_requests_per_minute()}
    for label, measured, baseline in (("idle", idle, base_idle), ("churn", churn, base_churn)):
        counts = summarize(count_audit(events, uids, measured["start"], measured["end"]), measured["minutes"])
        n_min = args.agents * measured["minutes"]
        result[label] = {
            **{k: round(v, 3) for k, v in counts.items()},
            "received_bytes": round(measured["received"] / n_min), "sent_bytes": round(measured["sent"] / n_min),
            "apiserver_cpu_ms": round(1000 * cpu_per_agent(measured["cpu"]["kube-apiserver"], measured["minutes"],
                                                            baseline["cpu"]["kube-apiserver"], baseline["minutes"],
                                                            args.agents), 2),
            "etcd_cpu_ms": round(1000 * cpu_per_agent(measured["cpu"]["etcd"], measured["minutes"],
                                                       baseline["cpu"]["etcd"], baseline["minutes"], args.agents), 2),
            "agent_cpu_ms": round(1000 * measured["bench_cpu"] / n_min, 2),
            "churned_pods": measured["churned"], "baseline_churned_pods": baseline["churned"],
            "connections": round(per_agent(measured["server_connections"], baseline["server_connections"], args.agents), 3),
            "client_connections": round(measured["client_connections"] / args.agents, 3),
            "apiserver_mib": round(per_agent(measured["apiserver_rss_mib"], baseline["apiserver_rss_mib"], args.agents), 3),
            "server_connections": measured["server_connections"], "baseline_server_connections": baseline["server_connections"],
            "apiserver_rss_mib": round(measured["apiserver_rss_mib"]), "baseline_apiserver_rss_mib": round(baseline["apiserver_rss_mib"]),
            "at": {str(n): {k: round(v, 3) for k, v in extrapolate(counts["requests"], n).items()} for n in CLUSTER_SIZES}}
        r = result[label]
        r["expected_watch_opens"] = round(watch_opens_per_minute(r["watches_open"], result["watch_timeout_s"]), 3)
        per_node = {"connections": r["connections"], "watches": r["watches_open"], "watch_opens_per_min": r["watch_opens"],
                    "bytes_per_min": r["received_bytes"] + r["sent_bytes"], "apiserver_mib": r["apiserver_mib"],
                    "apiserver_cpu_ms": r["apiserver_cpu_ms"]}
        for n in CLUSTER_SIZES:
            r["at"][str(n)]["apiserver_cores"] = round(apiserver_cores(r["apiserver_cpu_ms"], n), 2)
            r["at"][str(n)]["held"] = {k: round(v, 2) for k, v in at_scale(per_node, n).items()}
    say(table(result))
    print(json.dumps(result, sort_keys=True))
    return 0


def table(r: dict) -> str:
    lines = [f"  {r['reported']}/{r['agents']} agents reported; {r['matched_pods']}/{r['pods']} pods matched; "
             f"{r['agent_stderr_lines']} lines on the agents' stderr",
             *(f"    agent said: {line[:160]}" for line in r["agent_stderr_sample"]),
             "  per node a minute        idle     churn   (audit log by agent; watches apart)"]
    rows = (("lists", "list", "{:.2f}"), ("gets", "get", "{:.2f}"), ("writes", "write", "{:.2f}"),
            ("other", "other", "{:.2f}"), ("requests (no watch)", "requests", "{:.2f}"),
            ("watch opens", "watch_opens", "{:.2f}"), ("watches open (per node)", "watches_open", "{:.2f}"),
            ("bytes received", "received_bytes", "{:,}"), ("bytes sent", "sent_bytes", "{:,}"),
            ("apiserver CPU ms", "apiserver_cpu_ms", "{:.1f}"), ("etcd CPU ms", "etcd_cpu_ms", "{:.1f}"),
            ("connections (server side)", "connections", "{:.2f}"), ("connections (agent side)", "client_connections", "{:.2f}"),
            ("apiserver MiB (RSS)", "apiserver_mib", "{:.2f}"), ("watch opens (model)", "expected_watch_opens", "{:.2f}"),
            ("agent CPU ms (Python)", "agent_cpu_ms", "{:.1f}"))
    for label, key, form in rows:
        lines.append(f"  {label:<24}{form.format(r['idle'][key]):>8}  {form.format(r['churn'][key]):>8}")
    if r["idle"]["watch_opens"] == 0 and r["churn"]["watch_opens"] == 0:
        lines.append("  no watch was re-opened in a window: a window shorter than the agent's watch timeout cannot see "
                     "re-opens (a --minutes past it shows them)")
    lines.append(f"  levels at the window's end: server connections {r['idle']['server_connections']} "
                 f"(baseline {r['idle']['baseline_server_connections']}), API server RSS {r['idle']['apiserver_rss_mib']} MiB "
                 f"(baseline {r['idle']['baseline_apiserver_rss_mib']}); {r['libcurl_sessions']} agents on libcurl (HTTP/2)")
    lines.append("  at scale, idle: connections (agents / kubelets), watches held, watch opens/s, bytes/s, "
                 "API server GiB and cores for the agents")
    for n, x in r["idle"]["at"].items():
        h = x["held"]
        lines.append(f"  {int(n):>5}  {h['connections']:>8.0f} / {h['kubelet_connections']:<6}  {h['watches']:>8.0f}  "
                     f"{h['watch_opens_per_s']:>6.1f}  {h['bytes_per_s'] / 1e6:>6.2f} MB  {h['apiserver_gib']:>6.2f} GiB  "
                     f"{h['apiserver_cores']:>5.2f}")
    lines.append(f"  churned pods in the window: {r['churn']['churned_pods']} (baseline {r['churn']['baseline_churned_pods']})")
    lines.append("  bytes: decoded HTTP bytes of the agents (libcurl's count, or the TLS sockets of this process for an agent "
                 "on the official client), headers included; CPU: "
                 "/proc/<pid>/stat utime+stime, with agents minus the no-agent baseline window of the same kind, / N")
    lines.append(f"  kubelet model: {r['kubelet_per_node_min']:.1f} writes/min/node (6 lease PUTs + 0.2 status PATCHes, "
                 "v1.37.2 defaults); extrapolated requests a second, watches apart:")
    lines.append("  nodes    load    agents/s  kubelets/s  agent/kubelet  agents' share  apiserver cores (agents)")
    for load in ("idle", "churn"):
        for n, x in r[load]["at"].items():
            lines.append(f"  {int(n):>5}  {load:>6}  {x['agent_per_s']:>9.1f}  {x['kubelet_per_s']:>10.1f}  "
                         f"{x['ratio']:>13.2f}  {100 * x['share']:>12.0f}%  {x['apiserver_cores']:>10.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
