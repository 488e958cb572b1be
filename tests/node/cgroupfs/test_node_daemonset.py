"""The agent as it ships, on the real cgroupfs node: the image scripts/build-image made, imported into
the node's containerd (no registry), and `kubectl apply -k manifests/` (then each component) with the
real kubectl against the real control plane. The DaemonSet's pod runs under the real kubelet with
the manifests' securityContext exactly as shipped, on the pods' bridge network, with its
ServiceAccount's projected token, and talks to the API server through the kubernetes Service's
ClusterIP like any in-cluster client.

Then the faults agents meet on real nodes, each while a watcher reads the published report every
few seconds: nothing may crash-loop, lose the report or publish a false finding. Recovery times are
printed in the tier's summary (``node.timings``).

These run after the fault tests on that node (conftest.ORDER): from here on the node also runs the
agent's own pod, which the agent checks too. The reboot is last: it restarts every pod.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nodecheck import claim_findings, container_cgroup, divergences, verdicts
from realnode import KUBELET_ROOT, TEST_IMAGE
from vm import ROOT

import matrix

NAMESPACE = "kubectl-dra-system"
INTERVAL = 60  # the shipped DaemonSet's --interval
MI = 1 << 20
CONTROLLER = "kubectl-dra.io/node-agent"
FILLERS = "fillers"  # the namespace of the pods that make the node hold 60


def image_tarball() -> Path:
    from k8s_build import CACHE

    version = (ROOT / "kubectl_dra" / "__init__.py").read_text().split('__version__ = "')[1].split('"')[0]
    return CACHE.parent / "image" / f"dra-node-agent-{version}.tar"


def previous_manifests(into: Path) -> str:
    """manifests/ as the newest earlier commit that changed them left it (the release a user upgrades
    from); returns that commit."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)

    for commit in git("log", "--format=%H", "--", "manifests").stdout.split():
        if git("diff", "--quiet", commit, "--", "manifests").returncode == 1:  # differs from this checkout's
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "manifests"], capture_output=True,
                                     timeout=60, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=60)
            return commit
    pytest.fail("no earlier commit changed manifests/: the upgrade test needs the repository's history (a full clone)")


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- reading the agent ------------------------------------------------------------------------------

def kubectl_json(booted, *args: str):
    result = booted.plane.kubectl(*args, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def agent_pod(booted, ready: bool = False) -> dict | None:
    items = kubectl_json(booted, "get", "pods", "-n", NAMESPACE)["items"]
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    if len(live) != 1:
        return None
    pod = live[0]
    if ready and not any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])):
        return None
    return pod


def rolled_out(booted) -> bool:
    ds = kubectl_json(booted, "get", "daemonset", "-n", NAMESPACE, "dra-node-agent")
    status = ds["status"]
    return status.get("observedGeneration") == ds["metadata"]["generation"] and \
        status.get("updatedNumberScheduled") == status.get("desiredNumberScheduled") == status.get("numberReady") == 1


def apply(booted, directory: Path) -> dict:
    """`kubectl apply -k DIR`, then the rollout to finish and the agent's pod to be Ready (its
    readiness is a finished scan)."""
    result = booted.plane.kubectl("apply", "-k", str(directory))
    assert "Warning" not in result.stderr, result.stderr  # no Pod Security or deprecation warnings
    return wait_rollout(booted)


def wait_rollout(booted, timeout: float = 600) -> dict:
    try:
        return booted.node._until(lambda: rolled_out(booted) and agent_pod(booted, ready=True), timeout,
                                  "the DaemonSet rolled out and its pod Ready", interval=3)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\n--- the agent's container logs\n{agent_logs(booted)}") from None


def agent_logs(booted, lines: int = 40) -> str:
    """The agent's container logs as the kubelet keeps them on the node (the API server cannot reach
    this kubelet for `kubectl logs`)."""
    result = booted.node.shell(f"tail -n {lines} /var/log/pods/{NAMESPACE}_*/agent/*.log", check=False)
    return result["stdout"] + result["stderr"]


def report(booted) -> dict | None:
    return kubectl_json(booted, "get", "nodeenforcementreports.kubectl-dra.io", booted.node.name)


def until_report(booted, check, timeout: float, what: str) -> dict:
    return booted.node._until(lambda: (r := report(booted)) and check(r) and r, timeout, what, interval=3)


def all_match(doc: dict) -> bool:
    return set(verdicts(doc).values()) == {"Match"} and claim_findings(doc) == []


def our_events(booted, namespace: str = matrix.NAMESPACE) -> list[dict]:
    items = kubectl_json(booted, "get", "events.events.k8s.io", "-n", namespace)["items"]
    return [e for e in items if e.get("reportingController") == CONTROLLER]


def agent_metrics(booted) -> dict[str, float]:
    """The agent's /metrics, fetched from inside the node at its pod's address."""
    pod = agent_pod(booted)
    python = str(Path(sys.base_prefix) / "bin" / "python3")
    text = booted.node.vm.run(python, "-c", "import sys, urllib.request; "
                              "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())",
                              f"http://{pod['status']['podIP']}:8080/metrics")["stdout"]
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


class Watcher:
    """Reads the published report every few seconds while a fault happens: every version seen."""

    def __init__(self, booted):
        self.booted = booted
        self.seen: list[dict] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = None
        while not self.stop.is_set():
            try:
                doc = report(self.booted)
                if doc is not None and doc["status"]["observedAt"] != last:
                    last = doc["status"]["observedAt"]
                    self.seen.append(doc)
            except Exception:  # noqa: BLE001 - the API server may be the fault
                pass
            self.stop.wait(3)

    def false_findings(self, *planted: str) -> list[tuple]:
        """Diverged pods and error/warning claim findings in any version seen, except pods named
        in ``planted`` (info is what a node does on its way: a CDI spec not yet rewritten after a
        reboot)."""
        found = []
        for doc in self.seen:
            for pod in doc["status"]["pods"]:
                if pod["verdict"] == "Diverged" and pod["name"] not in planted:
                    found.append((doc["status"]["observedAt"], pod["name"], pod["divergences"]))
            found += [(doc["status"]["observedAt"], *f) for f in claim_findings(doc) if f[2] != "info"]
        return found


@contextmanager
def watching(booted):
    watcher = Watcher(booted)
    watcher.thread.start()
    try:
        yield watcher
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=30)


@contextmanager
def planted_divergence(booted, pod_name: str = "burstable", container: str = "app"):
    """A container's memory.max rewritten behind the kubelet's back (test_node_faults' first fault),
    put back afterwards."""
    path = container_cgroup(booted.pods[pod_name], container) + "/memory.max"
    vm = booted.node.vm
    before = vm.read(path)[path].strip()
    vm.write(path, str(300 * MI))
    try:
        yield path
    finally:
        vm.write(path, before)


def diverged_on(doc: dict, pod_name: str = "burstable") -> bool:
    return verdicts(doc).get(pod_name) == "Diverged" and \
        [d for d in divergences(doc) if d[0] == pod_name] == [(pod_name, "container", "app", "memory.max", "Unexplained")]


def restart_count(pod: dict) -> int:
    return pod["status"]["containerStatuses"][0]["restartCount"]


# -- deployment ---------------------------------------------------------------------------------------

WITNESS = {"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "NodeEnforcementReport",
           "metadata": {"name": "upgrade-witness", "labels": {"kubectl-dra.io/test": "upgrade"}}}


@pytest.fixture(scope="module")
def deployed(cgroupfs_node, tmp_path_factory):
    """The image imported, then an upgrade as a user makes it: the previous manifests applied, a
    report object in place, then `kubectl apply -k manifests/`, and the agent's pod Ready."""
    node, plane = cgroupfs_node.node, cgroupfs_node.plane
    tarball = image_tarball()
    assert tarball.is_file(), f"{tarball} missing: scripts/build-image makes it"
    began = time.monotonic()
    node.ctr("images", "import", "--platform", "linux/amd64", str(tarball))
    node.timings["image import"] = time.monotonic() - began
    previous = tmp_path_factory.mktemp("previous")
    cgroupfs_node.previous_commit = previous_manifests(previous)
    plane.kubectl("apply", "-k", str(previous / "manifests"))
    plane.kubectl("apply", "-f", "-", input=json.dumps(WITNESS))
    plane.kubectl("patch", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness", "--subresource=status",
                  "--type=merge", "-p", json.dumps({"status": {"observedAt": "2026-01-01T00:00:00Z",
                                                               "summary": {"pods": 1, "match": 1}}}))
    cgroupfs_node.witness = kubectl_json(cgroupfs_node, "get", "nodeenforcementreports.kubectl-dra.io",
                                         "upgrade-witness")
    began = time.monotonic()
    apply(cgroupfs_node, ROOT / "manifests")
    node.timings["upgrade rollout"] = time.monotonic() - began
    yield cgroupfs_node
    # the next boot's tests count that node's pods: the DaemonSet would put the agent there too
    plane.kubectl("delete", "daemonset", "-n", NAMESPACE, "dra-node-agent", "--cascade=foreground", "--wait=true",
                  "--timeout=300s", check=False)
    plane.kubectl("delete", "pods", "-n", NAMESPACE, "--all", "--force", "--grace-period=0", check=False)


def test_the_upgrade_keeps_report_objects_and_completes(deployed):
    """From the previous commit that changed manifests/ to this one: the CRD's objects stay (same uid,
    same status) and the DaemonSet rolled out (the fixture waited for it)."""
    witness = kubectl_json(deployed, "get", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness")
    assert witness["metadata"]["uid"] == deployed.witness["metadata"]["uid"]
    assert witness["status"] == deployed.witness["status"]
    assert rolled_out(deployed)
    deployed.plane.kubectl("delete", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness")


def test_the_agent_runs_as_shipped_and_reports_every_pod_as_match(deployed, dra):
    pod = agent_pod(deployed)
    spec = pod["spec"]
    container = spec["containers"][0]
    # exactly what the manifest says, as the kubelet runs it
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 65532
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert not spec.get("hostNetwork") and pod["status"]["podIP"].startswith("10.88.")
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0 and status["imageID"].startswith("sha256:")
    doc = until_report(deployed, lambda r: pod["metadata"]["name"] in verdicts(r), 300, "the agent's report")
    names = set(verdicts(doc))
    assert names == {p["metadata"]["name"] for p in matrix.pods()} | {pod["metadata"]["name"]}
    assert set(verdicts(doc).values()) == {"Match"} and divergences(doc) == []
    assert doc["status"]["nodeOptions"]["cgroupDriver"] == "cgroupfs"
    assert all(s["state"] != "read" for s in doc["status"]["sources"])  # no node-state component yet
    result = dra("verify", "--node", deployed.node.name, "--kubeconfig", deployed.user_kubeconfig)
    assert result.exit_code == 0, result
    assert f"1 node, {len(names)} pods: {len(names)} match" in result.stdout


# -- faults -----------------------------------------------------------------------------------------

def test_the_api_server_stopped_for_a_minute(deployed):
    """The agent keeps running (no restart: /healthz does not depend on the API server), keeps its
    last report, backs off, and once the API server is back publishes what changed on the node
    meanwhile within two scan intervals."""
    booted, plane = deployed, deployed.plane
    pod = agent_pod(booted, ready=True)
    until_report(booted, all_match, 2 * INTERVAL + 30, "all Match before the outage")
    with watching(booted) as watcher:
        plane.stop_apiserver()
        back = False
        try:
            with planted_divergence(booted):  # the node changes while the agent cannot publish
                time.sleep(60)
                booted.node.timings["api server back"] = plane.start_apiserver()
                back = True
                began = time.monotonic()
                until_report(booted, diverged_on, 2 * INTERVAL, "the divergence planted during the outage")
                booted.node.timings["report after the outage"] = time.monotonic() - began
        finally:
            if not back:
                plane.start_apiserver()
        until_report(booted, all_match, 2 * INTERVAL + 30, "all Match again")
    after = agent_pod(booted, ready=True)
    assert after["metadata"]["uid"] == pod["metadata"]["uid"] and restart_count(after) == restart_count(pod)
    assert watcher.false_findings("burstable") == []
    logs = agent_logs(booted, 200)
    assert "scan failed (keeping the last report)" in logs  # it did meet the outage
    assert "Traceback" not in logs


def test_the_agents_pod_deleted(deployed):
    """The DaemonSet brings a new pod; it finds the same divergence and publishes no second Event
    (Events are named after the divergence; the first pod's is kept)."""
    booted = deployed
    old = agent_pod(booted, ready=True)
    with planted_divergence(booted):
        until_report(booted, diverged_on, 2 * INTERVAL, "the planted divergence")
        events = [e for e in our_events(booted) if e["regarding"]["name"] == "burstable"]
        assert len(events) == 1 and events[0]["reason"] == "CgroupDivergence"
        uid = report(booted)["metadata"]["uid"]
        began = time.monotonic()
        booted.plane.kubectl("delete", "pod", "-n", NAMESPACE, old["metadata"]["name"], "--wait=true")
        new = wait_rollout(booted)
        booted.node.timings["agent pod replaced"] = time.monotonic() - began
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        time.sleep(10)  # its first scan (readiness) has published by now
        doc = report(booted)
        assert doc["metadata"]["uid"] == uid and diverged_on(doc)  # the report was not lost or recreated
        again = [e for e in our_events(booted) if e["regarding"]["name"] == "burstable"]
        assert [e["metadata"]["name"] for e in again] == [events[0]["metadata"]["name"]]
    until_report(booted, all_match, 2 * INTERVAL + 30, "all Match again")


def test_containerd_then_the_kubelet_restarted(deployed):
    """Containers outlive both (their shims stay); the agent neither restarts nor reports anything
    while the runtime and the kubelet come back."""
    booted, node = deployed, deployed.node
    agent = agent_pod(booted, ready=True)
    before = {p: restart_count(booted.pods[p]) for p in booted.pods}
    with watching(booted) as watcher:
        began = time.monotonic()
        node.stop_containerd()
        node.start_containerd()
        node.timings["containerd restart"] = time.monotonic() - began
        began = time.monotonic()
        node.stop_kubelet()
        started = now()
        node.start_kubelet()
        node.wait_ready(since=started)
        node.timings["kubelet restart"] = time.monotonic() - began
        time.sleep(2 * INTERVAL)  # two scans on the restarted runtime and kubelet
    after = agent_pod(booted, ready=True)
    assert after["metadata"]["uid"] == agent["metadata"]["uid"] and restart_count(after) == restart_count(agent)
    booted.refresh()
    assert {p: restart_count(booted.pods[p]) for p in booted.pods} == before
    assert watcher.false_findings() == []
    assert all_match(report(booted))


def filler(i: int) -> dict:
    """Every other one BestEffort, the rest Burstable with a memory limit; their requests are small,
    as the matrix's guaranteed pods leave the node (3 allocatable CPUs) little CPU to schedule."""
    resources = {"requests": {"cpu": "1m", "memory": "4Mi"}, "limits": {"memory": "32Mi"}} if i % 2 else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"filler-{i:02d}", "namespace": FILLERS},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": "sleep", "image": TEST_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "86400"],
                "resources": resources}]}}


def unscheduled(booted, namespace: str) -> list[str]:
    items = kubectl_json(booted, "get", "pods", "-n", namespace)["items"]
    return [f"{p['metadata']['name']}: {c.get('message')}" for p in items for c in p["status"].get("conditions", [])
            if c["type"] == "PodScheduled" and c["status"] != "True"]


def test_sixty_pods_first_scan_memory_and_cpu(deployed):
    """60 pods on the node (the matrix's, the agent's, 47 more): the agent's first scan after a
    restart, its memory.current and memory.peak against its 128Mi limit and its CPU, read from its
    own cgroup on the node."""
    booted, node = deployed, deployed.node
    count = 60 - len(matrix.pods()) - 1
    node.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FILLERS}}])
    began = time.monotonic()
    node.apply([filler(i) for i in range(count)])
    try:
        node.wait_pods(FILLERS, [f"filler-{i:02d}" for i in range(count)], timeout=600)
    except TimeoutError as exc:
        raise AssertionError(f"{unscheduled(booted, FILLERS)}\n{exc}") from None
    node.timings["47 more pods Running"] = time.monotonic() - began
    try:
        booted.plane.kubectl("delete", "pod", "-n", NAMESPACE, agent_pod(booted)["metadata"]["name"], "--wait=true")
        began = time.monotonic()
        pod = wait_rollout(booted)
        node.timings["first scan of 60 pods (pod created to Ready)"] = time.monotonic() - began
        doc = until_report(booted, lambda r: len(r["status"]["pods"]) == 60, 2 * INTERVAL, "a report of 60 pods")
        assert all_match(doc), [(n, v) for n, v in verdicts(doc).items() if v != "Match"]
        cgroup = container_cgroup(pod, "agent")
        cpu_before = node.cgroup_files(cgroup.removeprefix("/sys/fs/cgroup"), ["cpu.stat"])["cpu.stat"]
        time.sleep(2 * INTERVAL)  # two rescans
        files = node.cgroup_files(cgroup.removeprefix("/sys/fs/cgroup"),
                                  ["memory.current", "memory.peak", "memory.max", "cpu.stat", "memory.events"])
        metrics = agent_metrics(booted)
        usage = {k: int(v) for k, v in (line.split() for line in files["cpu.stat"].splitlines())}
        usage_before = {k: int(v) for k, v in (line.split() for line in cpu_before.splitlines())}
        cpu_millicores = (usage["usage_usec"] - usage_before["usage_usec"]) / (2 * INTERVAL * 1e6) * 1000
        first_scan = metrics[f'dra_agent_scan_duration_seconds_sum{{node="{node.name}"}}']
        scans = metrics[f'dra_agent_scan_duration_seconds_count{{node="{node.name}"}}']
        node.measured = {"memory.current MiB": int(files["memory.current"]) / MI,
                         "memory.peak MiB": int(files["memory.peak"]) / MI,
                         "CPU millicores (2 idle intervals)": cpu_millicores,
                         "scans": scans, "scan seconds (mean)": first_scan / scans}
        assert int(files["memory.max"]) == 128 * MI  # the manifest's limit, as the kubelet wrote it
        assert int(files["memory.peak"]) < 128 * MI * 0.75, node.measured
        assert "oom_kill 0" in files["memory.events"]
        assert cpu_millicores < 100, node.measured
        assert restart_count(agent_pod(booted)) == 0
    finally:
        booted.plane.kubectl("delete", "namespace", FILLERS, "--wait=true", "--timeout=600s")


# -- components -------------------------------------------------------------------------------------

def test_the_node_dra_state_component_reads_the_kubelets_files(deployed):
    """manifests/node-dra-state: the checkpoint (root-only), the PodResources socket and the CDI
    directories, mounted read-only; the agent then runs as root with every capability dropped."""
    pod = apply(deployed, ROOT / "manifests" / "node-dra-state")
    assert pod["spec"]["securityContext"]["runAsUser"] == 0
    doc = until_report(deployed, lambda r: r["status"].get("claims"), 2 * INTERVAL, "a report with the node's claims")
    assert {s["name"]: s["state"] for s in doc["status"]["sources"]} == {
        "draCheckpoint": "read", "cdi": "read", "podResources": "read"}
    assert len(doc["status"]["claims"]) == 4 and claim_findings(doc) == []
    assert set(verdicts(doc).values()) == {"Match"}


def test_the_kubelet_state_component_reads_cpu_manager_state(deployed):
    apply(deployed, ROOT / "manifests" / "kubelet-state")
    doc = until_report(deployed, lambda r: "cpu_manager_state" in r["status"]["nodeOptionsSource"].get(
        "cpuManagerPolicy", ""), 2 * INTERVAL, "the policy from cpu_manager_state")
    assert doc["status"]["nodeOptions"]["cpuManagerPolicy"] == "static"
    assert set(verdicts(doc).values()) == {"Match"}


def network_objects() -> list[dict]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "net", "namespace": matrix.NAMESPACE},
           "spec": {"terminationGracePeriodSeconds": 0,
                    "resourceClaims": [{"name": "nic", "resourceClaimTemplateName": "network"}],
                    "containers": [{"name": "app", "image": TEST_IMAGE, "imagePullPolicy": "Never",
                                    "command": ["sleep", "86400"], "resources": {"claims": [{"name": "nic"}]}}]}}
    return [matrix.claim_template("network"), pod]


def test_the_network_check_component_finds_a_device_left_on_the_host(deployed):
    """manifests/network-check: hostPID, root, SYS_ADMIN and SYS_PTRACE. A network device allocated
    to a pod (the driver's ``dra.net/ifName`` attribute, ``networkData`` in the claim's status, as
    dranet writes them) whose interface is still in the host's namespace is NetworkDeviceInHost;
    moved into the pod's namespace under its pod name, the pod is Match. The host's namespace is PID
    1's: the agent's own is its pod's."""
    booted, node = deployed, deployed.node
    apply(booted, ROOT / "manifests" / "network-check")
    host_if, pod_if = matrix.NETWORK_INTERFACE, "net1"
    node.shell(f"ip link add {host_if} type veth peer name {host_if}-peer")
    try:
        node.apply(network_objects())
        pod = node.wait_pods(matrix.NAMESPACE, ["net"])["net"]
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = kubectl_json(booted, "get", "resourceclaim", "-n", matrix.NAMESPACE, claim_name)
        result = claim["status"]["allocation"]["devices"]["results"][0]
        status = {"status": {"devices": [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                                          "networkData": {"interfaceName": pod_if}}]}}
        booted.plane.kubectl("patch", "resourceclaim", "-n", matrix.NAMESPACE, claim_name, "--subresource=status",
                             "--type=merge", "-p", json.dumps(status))
        doc = until_report(booted, lambda r: verdicts(r).get("net") == "Diverged", 2 * INTERVAL + 30,
                           "NetworkDeviceInHost for the pod net")
        found = [d for p in doc["status"]["pods"] if p["name"] == "net" for d in p["divergences"]]
        assert [(d["cause"], d["file"]) for d in found] == [("NetworkDeviceInHost", f"netns:{pod_if}")]
        assert {n: v for n, v in verdicts(doc).items() if n != "net"} == dict.fromkeys(set(verdicts(doc)) - {"net"},
                                                                                       "Match")
        procs = node.vm.read(container_cgroup(pod, "app") + "/cgroup.procs")
        pid = next(iter(procs.values())).split()[0]
        node.shell(f"ip link set {host_if} netns {pid} name {pod_if}")  # what dranet does at sandbox start
        until_report(booted, lambda r: verdicts(r).get("net") == "Match", 2 * INTERVAL + 30, "the pod net Match")
    finally:
        node.shell(f"ip link del {host_if}", check=False)
        booted.plane.kubectl("delete", "-f", "-", "--wait=true", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": network_objects()}), check=False)


# -- the reboot (last: it restarts every pod) ---------------------------------------------------------

def test_the_node_rebooted(deployed):
    """Power cut after a sync, then boot: /var/lib (the checkpoint, containerd's images) is on the
    node's disk, /run (containers, CDI specs) is gone. The agent, with the node's DRA state, comes
    back with the kubelet, and no report published during the start-up holds a false finding; the
    checkpoint still holds the node's claims and the report converges to Match."""
    booted, node = deployed, deployed.node
    apply(booted, ROOT / "manifests" / "node-dra-state")
    until_report(booted, lambda r: all_match(r) and len(r["status"]["claims"]) == 4, 2 * INTERVAL,
                 "all Match with the node's claims")
    checkpoint = node.vm.read(f"{KUBELET_ROOT}/dra_manager_state")[f"{KUBELET_ROOT}/dra_manager_state"]
    uid = report(booted)["metadata"]["uid"]
    with watching(booted) as watcher:
        began = time.monotonic()
        rebooted_at = now()
        timings = node.reboot()
        names = [p["metadata"]["name"] for p in matrix.pods()]

        def restarted():
            items = kubectl_json(booted, "get", "pods", "-n", matrix.NAMESPACE)["items"]
            fresh = [p for p in items if p["metadata"]["name"] in names and p["status"].get("phase") == "Running"
                     and all(s.get("ready") and s["state"].get("running", {}).get("startedAt", "") >= rebooted_at
                             for s in p["status"].get("containerStatuses", []))]
            return len(fresh) == len(names)

        node._until(restarted, 900, "every matrix pod running again after the reboot", interval=5)
        node.timings.update({f"reboot: {k}": v for k, v in timings.items()})
        node.timings["reboot: pods running"] = time.monotonic() - began
        wait_rollout(booted)
        doc = until_report(booted, lambda r: all_match(r) and r["status"]["observedAt"] >= rebooted_at,
                           3 * INTERVAL, "all Match after the reboot")
        node.timings["reboot: report Match"] = time.monotonic() - began
    booted.refresh()
    after = node.vm.read(f"{KUBELET_ROOT}/dra_manager_state")[f"{KUBELET_ROOT}/dra_manager_state"]
    held = {c["ClaimUID"] for c in json.loads(json.loads(checkpoint)["Data"])["ClaimInfoStateList"]}
    assert len(held) == 4 and held == {c["ClaimUID"] for c in json.loads(json.loads(after)["Data"])["ClaimInfoStateList"]}
    assert len(doc["status"]["claims"]) == 4
    assert doc["metadata"]["uid"] == uid
    assert watcher.false_findings() == [], watcher.false_findings()
    infos = {(f[1], f[2]) for d in watcher.seen for f in claim_findings(d) if f[2] == "info"}
    assert infos <= {("CDIDeviceMissing", "info")}, infos  # the start-up, said as what it is
    assert restart_count(agent_pod(booted)) <= 1  # the reboot's own restart, no crash loop
