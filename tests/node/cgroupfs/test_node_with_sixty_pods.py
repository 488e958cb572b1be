"""The agent on a full node: 60 pods (the matrix's, the agent's, 47 more) and every node source
read each scan (the node-dra-state overlay: the checkpoints, CDI specs, PodResources over gRPC; and
the network check), as most nodes run it. Its memory.peak from its cgroup; its CPU to the first
report after a restart and per scan from its own metrics. Memory and the first report are bounded
a third above what was measured here, so that a regression of a third fails; CPU per scan is only
printed (see BOUNDS).

The 47 pods are left on the node: nothing after this needs it empty, and tearing them down costs the
kubelet a minute under emulation (the package's VM is stopped after its last test anyway).
"""

from __future__ import annotations

import json
import statistics
import time

from agentpod import INTERVAL, NAME, NAMESPACE, all_match, full, restart_count
from nodecheck import container_cgroup, verdicts
from realnode import TEST_IMAGE
from vm import ROOT
from waiting import until

import matrix

MI = 1 << 20
FILLERS = "fillers"
# Measured on this machine kind (2 cores, qemu TCG) on 2026-11-29. CPU figures are in units of
# REFERENCE, the CPU time of a fixed Python loop in the same guest (the least of three runs), so that a
# slower or busier machine moves the figure and its unit together. CPU rather than wall time: under
# emulation the wall time to a Ready pod is mostly the kubelet's and containerd's, and varied 1.7x
# between runs here while the agent's own CPU did not.
REFERENCE = "import time; t = time.process_time(); sum(i * i for i in range(300_000)); print(time.process_time() - t)"
MEASURED = {"memory.peak MiB": 59.2, "CPU to the first report / reference": 71.1}
BOUNDS = {what: value * 4 / 3 for what, value in MEASURED.items()}
# CPU per scan is measured and printed, not bounded: on the same code it read 0.22, 0.25 and 0.39 s
# (ratio 0.36 to 0.97) in four runs, since every read of /metrics by this test costs the agent CPU
# too and how many fit in a scan depends on the host's load; a bound a third above one run would
# fail at random. Memory (59-63 MiB) and the CPU to the first report (ratio 55-71) held.


def filler(i: int) -> dict:
    """Every other one BestEffort, the rest Burstable with a memory limit, on the host network (no CNI
    work per pod); their requests are small, as the matrix's pods leave the node little CPU."""
    resources = {"requests": {"cpu": "1m", "memory": "4Mi"}, "limits": {"memory": "32Mi"}} if i % 2 else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"filler-{i:02d}", "namespace": FILLERS},
            "spec": {"terminationGracePeriodSeconds": 0, "hostNetwork": True, "containers": [{
                "name": "sleep", "image": TEST_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "86400"],
                "resources": resources}]}}


def node_selector(agent, value: str | None) -> None:
    """Keep the agent off the node (a selector no node has) or let it back: the DaemonSet's own way to
    take its pod away while the 47 pods start, so their start-up is not also 47 rescans."""
    patch = {"spec": {"template": {"spec": {"nodeSelector": {"kubectl-dra.test/away": value}}}}}
    agent.plane.kubectl("patch", "daemonset", "-n", NAMESPACE, NAME, "--type=strategic", "-p", json.dumps(patch))


def test_sixty_pods_first_scan_memory_and_cpu_with_every_source(deployed, agent_images, tmp_path):
    agent, node = deployed.agent, deployed.agent.node
    agent.apply(full(tmp_path, agent_images))  # every check on (a no-op when already)
    count = 60 - len(matrix.pods()) - 1
    node_selector(agent, "yes")
    node.wait("the agent's pod gone", lambda: agent.pod() is None and not [
        p for p in agent.kubectl_json("get", "pods", "-n", NAMESPACE)["items"]], daemon="kubelet")
    node.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FILLERS}}])
    began = time.monotonic()
    node.apply([filler(i) for i in range(count)])
    node.wait_pods(FILLERS, [f"filler-{i:02d}" for i in range(count)])
    node.timings[f"{count} more pods Running"] = time.monotonic() - began
    python = str(ROOT / ".venv" / "bin" / "python")
    reference = min(float(node.vm.run(python, "-c", REFERENCE, env={"PYTHONDONTWRITEBYTECODE": "1"})["stdout"])
                    for _ in range(3))
    began = time.monotonic()
    node_selector(agent, None)  # null removes the key: the DaemonSet's pod comes back
    pod = agent.wait_rollout()
    ready = time.monotonic() - began
    first = agent.cpu()  # (scans, CPU seconds) right after Ready: start-up and its first scan(s)
    with agent.reports() as reports:
        doc = reports.until("a report of 60 pods", lambda o: len(o[node.name]["status"]["pods"]) == 60 and
                            o[node.name], stall=120)
    assert all_match(doc), [(n, v) for n, v in verdicts(doc).items() if v != "Match"]
    assert {s["name"]: s["state"] for s in doc["status"]["sources"]} == {
        "draCheckpoint": "read", "cdi": "read", "podResources": "read"}
    samples = [agent.cpu()]
    until("ten more scans", lambda: samples.append(agent.cpu()) or samples[-1][0] - samples[0][0] >= 10,
          stall=30 * INTERVAL, every=0.5)
    per_scan = statistics.median((b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(samples, samples[1:]) if b[0] > a[0])
    to_first = first[1] - (first[0] - 1) * per_scan  # the scans after the first that ran before Ready was seen
    cgroup = container_cgroup(pod, "agent").removeprefix("/sys/fs/cgroup")
    files = node.cgroup_files(cgroup, ["memory.peak", "memory.max", "memory.events"])
    measured = {"memory.peak MiB": int(files["memory.peak"]) / MI,
                "CPU per scan / reference": per_scan / reference,
                "CPU to the first report / reference": to_first / reference}
    agent.booted.measured.update({f"60 pods: {k}": v for k, v in measured.items()})
    agent.booted.measured.update({"60 pods: reference CPU (s)": reference, "60 pods: CPU per scan (s)": per_scan,
                                  "60 pods: CPU to the first report (s)": to_first,
                                  "60 pods: DaemonSet pod back to Ready (s)": ready})
    assert int(files["memory.max"]) == 128 * MI  # the manifest's limit, as the kubelet wrote it
    assert "oom_kill 0" in files["memory.events"]
    assert {k: round(v, 2) for k, v in measured.items() if k in BOUNDS and v > BOUNDS[k]} == {}, (measured, BOUNDS)
    assert restart_count(agent.pod()) == 0
