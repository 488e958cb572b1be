"""``kubectl dra claims -w`` and ``taints -w`` against the real kube-apiserver, kube-scheduler and
resourceclaim controller (v1.37.2): the CLI runs as a process, as a user runs it, while a claim is
created, allocated and reserved by the real scheduler for a pod, released when the pod goes, and
deleted; and while a DeviceTaintRule is created and deleted. Each row must come as it happens
(flushed) and say the state the claim is in. About 20 s on top of the shared control plane."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from clusterobjects import driver_class, ready_node, wait_for
from loader import load

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "watch-live"
NODE = "watch-node"
DRIVER = "watch.example.com"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"


def claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": DRIVER}}]}}}


def user_pod(name: str, claim_name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE}, "terminationGracePeriodSeconds": 0,
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}]}}


@pytest.fixture(scope="module")
def cluster(full_cluster, tmp_path_factory):
    load(full_cluster, [
        ready_node(NODE),
        driver_class(DRIVER),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-watch"},
         "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "dev-0"}, {"name": "dev-1"}]}},
        claim("before"),
    ])
    kubeconfig = full_cluster.kubeconfig(tmp_path_factory.mktemp("watch") / "kubeconfig", namespace=NAMESPACE)
    return full_cluster, str(kubeconfig)


class Watching:
    """The CLI as a process; its stdout lines as they arrive."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from kubectl_dra.cli import main; main()", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
            # a run started in the background of a script inherits SIGINT ignored, and Python then keeps
            # it ignored: the interrupt below must reach it as it reaches a terminal's kubectl dra
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: list[str] = []
        self._inbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._inbox.put(line.rstrip("\n"))

    def expect(self, what: str, match, timeout: float = 60.0) -> list[str]:
        """Wait for a line ``match`` accepts (its cells); a row must come as it happens, not at exit."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._inbox.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.lines.append(line)
            if match(line.split()):
                return line.split()
        raise AssertionError(f"no row for {what}; rows so far:\n" + "\n".join(self.lines))

    def interrupt(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        while not self._inbox.empty():
            self.lines.append(self._inbox.get())
        return self.process.returncode, err


def test_claims_watch_follows_a_claim_through_the_real_scheduler(cluster, dra):
    plane, kubeconfig = cluster
    cli = Watching("claims", "--kubeconfig", kubeconfig, "-w", "-o", "wide", "--output-watch-events")
    header = cli.expect("the header", lambda cells: cells[:2] == ["EVENT", "NAME"])
    assert header[:6] == ["EVENT", "NAME", "STATE", "NODE", "DEVICES", "RESERVED-FOR"]
    cli.expect("the claim listed first", lambda c: c[:3] == ["ADDED", "before", "pending"])

    plane.request("POST", CLAIMS, claim("gpu"))
    cli.expect("gpu created", lambda c: c[:5] == ["ADDED", "gpu", "pending", "<none>", "<none>"])

    plane.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", user_pod("user", "gpu"))
    reserved = cli.expect("gpu allocated and reserved by the scheduler",
                          lambda c: c[:2] == ["MODIFIED", "gpu"] and "reserved" in c[2])
    assert reserved[2] == "allocated,reserved" and reserved[3] == NODE and reserved[4] in ("dev-0", "dev-1")
    assert reserved[5] == "pod/user" and reserved[9] == "user"  # RESERVED-FOR, and PODS from the pods read again
    table = dra("claims", "--kubeconfig", kubeconfig, "-o", "wide", "--no-headers")  # the same row without -w
    (same,) = [line.split() for line in table.stdout.splitlines() if line.split()[0] == "gpu"]
    assert same[:5] + same[6:] == reserved[1:6] + reserved[7:]  # (but AGE)
    status = plane.request("GET", f"{CLAIMS}/gpu")["status"]
    assert [r["name"] for r in status["reservedFor"]] == ["user"] and status["allocation"]

    plane.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/user",
                  {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    released = cli.expect("gpu released when its pod is gone (the resourceclaim controller)",
                          lambda c: c[:2] == ["MODIFIED", "gpu"] and "reserved" not in c[2])
    assert released[5] == "<none>"

    plane.request("DELETE", f"{CLAIMS}/gpu")
    gone = cli.expect("gpu deleted", lambda c: c[:2] == ["DELETED", "gpu"])
    wait_for("gpu to be gone", lambda: not any(c["metadata"]["name"] == "gpu"
                                               for c in plane.request("GET", CLAIMS)["items"]))
    code, err = cli.interrupt()
    assert code == 0 and "Traceback" not in err, err

    rows = [line.split() for line in cli.lines if line.split()[1:2] == ["gpu"]]
    # every state it went through, in order. The v1.37 scheduler allocates and reserves in one
    # write (after adding its finalizer: a pending row with the pod as PODS); the controller
    # releases and deallocates in one write when the pod is gone, then drops the finalizer
    states = [r[2] for r in rows]
    assert [s for n, s in enumerate(states) if n == 0 or states[n - 1] != s] == \
        ["pending", "allocated,reserved", "pending"], "\n".join(cli.lines)
    assert rows[0][0] == "ADDED" and rows[-1] == gone and all(r[0] == "MODIFIED" for r in rows[1:-1])


def test_taints_watch_follows_a_device_taint_rule(cluster):
    plane, kubeconfig = cluster
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "watch-maintenance"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": NODE, "device": "dev-1"},
                     "taint": {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}}}
    cli = Watching("taints", "--kubeconfig", kubeconfig, "-w", "--output-watch-events", "-o", "wide")
    device = f"{DRIVER}/{NODE}/dev-1"
    # the first output comes after the watches' lists: a rule created from here on is a change
    cli.expect("the first output", lambda cells: bool(cells))
    plane.request("POST", "/apis/resource.k8s.io/v1/devicetaintrules", rule)
    added = cli.expect("the rule's device", lambda c: c[:2] == ["ADDED", device])
    assert added[2:5] == [NODE, "NoSchedule", "example.com/maintenance=soon:NoSchedule"]
    assert "rule/watch-maintenance" in added
    plane.request("DELETE", "/apis/resource.k8s.io/v1/devicetaintrules/watch-maintenance")
    deleted = cli.expect("the device no longer tainted", lambda c: c[:2] == ["DELETED", device])
    assert deleted[1:] == added[1:]  # its row as last seen, as kubectl prints a deleted object
    code, err = cli.interrupt()
    assert code == 0 and "Traceback" not in err, err
    assert not [line for line in cli.lines if device in line and line.split()[0] not in ("ADDED", "DELETED")]
