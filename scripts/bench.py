"""Measure what the design promises: fast ``--help``, one list call per kind at scale.

Each measured command runs as a subprocess (as a user runs it); wall time is taken around it and
peak memory from the child's rusage. The API server is the test suite's local fake on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from apiserver import FakeAPIServer  # noqa: E402
from builders import claim, pod, reserved_pod, resource_slice  # noqa: E402

BIN = Path(sys.executable).parent


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float, int, subprocess.CompletedProcess]:
    """Wall seconds, CPU seconds of the child, its peak RSS in MiB, and the completed process.

    The peak is measured by the child itself (``/usr/bin/time``-style, via a wrapper) because
    RUSAGE_CHILDREN only keeps the maximum over every child so far.
    """
    wrapper = [sys.executable, "-c",
               "import resource,subprocess,sys;"
               "r=subprocess.run(sys.argv[1:]);"
               "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
               "sys.stderr.write(f'\\nRUSAGE {u.ru_utime+u.ru_stime} {u.ru_maxrss}\\n');sys.exit(r.returncode)", *cmd]
    start = time.perf_counter()
    done = subprocess.run(wrapper, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    line = [l for l in done.stderr.splitlines() if l.startswith("RUSAGE ")][-1].split()
    return wall, float(line[1]), int(line[2]) // 1024, done


def bench_help(runs: int) -> None:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([str(BIN / "kubectl-dra"), "--help"], capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"kubectl dra --help: median {statistics.median(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms over {runs} runs")


def build_cluster(n_claims: int, n_pods: int) -> list[dict]:
    objects: list[dict] = []
    nodes = max(1, n_claims // 8)
    for n in range(nodes):
        objects.append(resource_slice(f"node-{n}", "gpu.example.com", [f"gpu-{i}" for i in range(8)]))
    for i in range(n_pods):
        ns = f"ns-{i % 50}"
        if i < n_claims:
            p = pod(f"pod-{i}", ns, node=f"node-{i // 8}", claims={"gpu": f"claim-{i}"})
        else:
            p = pod(f"pod-{i}", ns, node=f"node-{(i // 8) % nodes}")
        objects.append(p)
        if i < n_claims:
            objects.append(claim(f"claim-{i}", ns, devices=[("gpu.example.com", f"node-{i // 8}", f"gpu-{i % 8}")],
                                 node=f"node-{i // 8}", reserved_for=[reserved_pod(p)]))
    return objects


def bench_cluster(n_claims: int, n_pods: int, tmp: Path) -> None:
    objects = build_cluster(n_claims, n_pods)
    with FakeAPIServer(objects) as server:
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: b\n"
            f"clusters: [{{name: b, cluster: {{server: '{server.url}'}}}}]\n"
            "users: [{name: b, user: {token: t}}]\n"
            "contexts: [{name: b, context: {cluster: b, user: b, namespace: ns-7}}]\n")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        for label, args in [("claims -A", ["claims", "-A", "-o", "wide"]),
                            ("explain claim", ["explain", "claim", "claim-7", "-n", "ns-7", "-o", "json"])]:
            server.requests.clear()
            wall, cpu, peak, done = timed([str(BIN / "kubectl-dra"), *args], env)
            if done.returncode != 0:
                print(f"{label}: exit {done.returncode}: {done.stderr.strip()[:300]}")
                continue
            lists = server.list_requests()
            kinds = sorted({r.resource for r in lists})
            print(f"{label} over {n_claims} claims / {n_pods} pods: {wall:.2f} s wall (incl. the local fake "
                  f"API server), {cpu:.2f} s CPU in kubectl-dra, peak {peak} MiB, "
                  f"{len(lists)} list requests (pages) for {len(kinds)} kinds {kinds}, "
                  f"{len(done.stdout.splitlines())} output lines")


def bench_prediction(n_pods: int) -> None:
    """The core prediction (explain pod / the agent's expectation) over many DRA pods, in-process."""
    sys.path.insert(0, str(ROOT / "tests"))
    from podspec import ctr, entries_of, entry, spec_pod

    from kubectl_dra.cgroups.options import NodeOptions
    from kubectl_dra.cgroups.predict import predict_pod

    pods = []
    for i in range(n_pods):
        containers = [ctr(f"c{j}", {"cpu": f"{100 + i % 900}m", "memory": f"{1 + j}Gi"},
                          {"cpu": "2", "memory": f"{2 + j}Gi"} if i % 3 else {}, claims=["x"]) for j in range(2)]
        pods.append(spec_pod(containers, init=[ctr("proxy", {"cpu": "100m"}, sidecar=True)],
                             uid=f"00000000-0000-0000-0000-{i:012d}",
                             entries=[entry("x", ["c0", "c1"], {"cpu": f"{1 + i % 8}"},
                                            {"memory": ("1Gi", "512Mi")})]))
    options = NodeOptions()
    start = time.perf_counter()
    files = 0
    for pod in pods:
        prediction = predict_pod(pod, entries_of(pod), options)
        files += len(prediction.pod.files) + sum(len(c.files) for c in prediction.containers)
    wall = time.perf_counter() - start
    print(f"cgroup prediction: {n_pods} pods (3 containers each, one DRA claim) in {wall:.2f} s = "
          f"{n_pods / wall:.0f} pods/s, {files} files predicted")


def bench_agent_scan(n_pods: int = 250, containers: int = 4) -> None:
    """dra-node-agent scan over a tree of n_pods x containers, against simply reading the same files."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from cgroup_tree import build_tree, set_file
    from podspec import ctr, entry

    from kubectl_dra.cgroups.options import NodeOptions
    from kubectl_dra.model.inventory import Inventory
    from kubectl_dra.model.registry import parse_object

    pods = []
    for i in range(n_pods):
        uid = f"{i:08d}-0000-4000-8000-000000000000"
        cs = [ctr(f"c{j}", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"} if j % 2 else {},
                  claims=["x"]) for j in range(containers)]
        raw = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"p{i}", "namespace": "ns", "uid": uid, "resourceVersion": str(1000 + i)},
               "spec": {"nodeName": "n1", "containers": cs, "resourceClaims": [{"name": "x", "resourceClaimName": "x"}]},
               "status": {"phase": "Running",
                          "containerStatuses": [{"name": c["name"], "containerID": f"containerd://{i:032d}{j:032d}",
                                                 "state": {"running": {}}} for j, c in enumerate(cs)],
                          "nodeAllocatableResourceClaimStatuses": [
                              entry("x", [c["name"] for c in cs], {"cpu": "2"}, {"memory": ("1Gi", "256Mi")})]}}
        pods.append(parse_object(raw))
    planted = {(f"p{i}", "c1") for i in range(0, n_pods, 50)}
    with tempfile.TemporaryDirectory() as tmp:
        dirs = build_tree(Path(tmp), pods, NodeOptions())
        for key in planted:
            set_file(dirs[key], "memory.max", str(2 << 30))  # the container limit without its DRA amounts
        snapshot = Path(tmp) / "pods.yaml"
        import yaml

        snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [p.raw for p in pods]}))
        files = sum(1 for d in dirs.values() for f in d.iterdir() if f.name != "cgroup.procs")
        code = (
            "import resource,sys,time;from pathlib import Path;"
            "from kubectl_dra.kube.snapshot import load_snapshot;from node_agent.cgroupfs import CgroupFS;"
            "from node_agent.scan import scan;"
            f"inv=load_snapshot(Path({str(snapshot)!r}));fs=CgroupFS({tmp + '/fs/cgroup'!r});"
            "cache={};c0=time.process_time();r=scan('n1',inv,fs,{},cache=cache);c1=time.process_time();"
            "s0=time.process_time();scan('n1',inv,fs,{},cache=cache);s1=time.process_time();"
            "paths=[(fs.root/p.cgroup) for p in r.status.pods];"
            "t0=time.process_time();"
            "[open(f).read() for d in sorted(fs.root.rglob('*')) if d.is_file() and d.name!='cgroup.procs' "
            "and 'kubepods' in str(d) for f in [d]];t1=time.process_time();"
            "print(r.status.summary.diverged, round((c1-c0)*1000,1), round((s1-s0)*1000,1), round((t1-t0)*1000,1),"
            " [int(l.split()[1])//1024 for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            print("agent scan failed:", out.stderr[-500:])
            return
        diverged, scan_ms, steady_ms, read_ms, rss = out.stdout.split()
        print(f"agent scan: {n_pods} pods x {containers} containers ({files} files): {scan_ms} ms CPU for the first "
              f"scan, {steady_ms} ms CPU for a rescan (unchanged pods are not predicted again), "
              f"{read_ms} ms CPU to walk and read the same tree naively, peak RSS (VmHWM) {rss} MiB (process incl. imports "
              f"and the pod list), {diverged} pods diverged (planted {len(planted)})")


def bench_verify(n_reports: int, pods_per_node: int, tmp: Path) -> None:
    """kubectl dra verify -A over many NodeEnforcementReports (and the pods they cross-check)."""
    from kubectl_dra.verify.report import Divergence, NodeEnforcementReport, PodVerdict, ReportMetadata, ReportStatus

    objects: list[dict] = []
    for n in range(n_reports):
        node = f"node-{n}"
        verdicts = []
        for i in range(pods_per_node):
            p = pod(f"pod-{n}-{i}", f"ns-{n % 50}", node=node)
            objects.append(p)
            diverged = i == 0 and n % 100 == 0
            verdicts.append(PodVerdict(
                namespace=p["metadata"]["namespace"], name=p["metadata"]["name"], uid=p["metadata"]["uid"],
                verdict="Diverged" if diverged else "Match",
                divergences=[Divergence(scope="container", container="main", file="memory.max", expected="2147483648",
                                        observed="1073741824", cause="DRAAmountMissing", severity="error")]
                if diverged else []))
        report = NodeEnforcementReport(metadata=ReportMetadata(name=node),
                                       status=ReportStatus(observed_at="2026-11-20T09:35:00Z", pods=verdicts)).summarize()
        objects.append(report.model_dump(mode="json", by_alias=True))
    with FakeAPIServer(objects, served={"kubectl-dra.io": ["v1alpha1"]}) as server:
        kubeconfig = tmp / "kubeconfig-verify"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: b\n"
            f"clusters: [{{name: b, cluster: {{server: '{server.url}'}}}}]\n"
            "users: [{name: b, user: {token: t}}]\n"
            "contexts: [{name: b, context: {cluster: b, user: b}}]\n")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        server.requests.clear()
        wall, cpu, peak, done = timed([str(BIN / "kubectl-dra"), "verify", "-A"], env)
        lists = server.list_requests()
        print(f"verify -A over {n_reports} reports / {n_reports * pods_per_node} pods: {wall:.2f} s wall (incl. the "
              f"local fake API server), {cpu:.2f} s CPU in kubectl-dra, peak {peak} MiB, exit {done.returncode}, "
              f"{len(lists)} list requests (pages) for kinds {sorted({r.resource for r in lists})}, "
              f"{len(done.stdout.splitlines())} output lines")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--predict-pods", type=int, default=10000)
    parser.add_argument("--reports", type=int, default=5000)
    args = parser.parse_args()
    bench_help(args.runs)
    bench_prediction(args.predict_pods)
    bench_agent_scan()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        bench_verify(args.reports, 10, Path(tmp))
        bench_cluster(args.claims, args.pods, Path(tmp))
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_overlays.py")])


if __name__ == "__main__":
    main()
