"""The agent as an operator deploys it on the real node, and what the tests read of it.

Deploying: the image that ``scripts/build-image`` wrote is pushed to a registry with skopeo (the
registry on the host, which the node reaches through qemu's forward), and a kustomization of the
project's manifests carries the operator's own changes: the image's registry (a kustomize
``images:`` entry), a shorter ``--interval`` (a patch that adds the flag; click takes the last), and
the components wanted. ``kubectl apply -k`` that directory, then the rollout.

Reading: the agent's pod (the API), its report (a watch: every version the API server stores), its
``/metrics`` and ``/report`` (fetched inside the node at the pod's address, where a monitoring
system would scrape them), its container logs and its container's exit (as the node keeps them).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from apiwatch import Watch
from nodecheck import claim_findings, verdicts
from waiting import until

NAMESPACE = "kubectl-dra-system"
NAME = "dra-node-agent"
REPORTS = "/apis/kubectl-dra.io/v1alpha1/nodeenforcementreports"
INTERVAL = 5  # seconds between the deployed agent's rescans (the shipped manifests say 60)
CONTROLLER = "kubectl-dra.io/node-agent"


@dataclass
class Overlay:
    """An operator's kustomization of one of the project's overlays (``manifests``,
    ``manifests/node-dra-state``, …) in ``directory``."""

    directory: Path
    base: Path
    image: str  # the registry name the node pulls from, without the tag
    interval: int = INTERVAL
    components: tuple[Path, ...] = ()

    def write(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        def relative(path: Path) -> str:  # kustomize takes bases by relative path
            return os.path.relpath(path, self.directory)

        document = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [relative(self.base)],
            "images": [{"name": "kubectl-dra-node-agent", "newName": self.image}],
            "patches": [{"target": {"kind": "DaemonSet", "name": NAME},
                         "patch": yaml.safe_dump([{"op": "add", "path": "/spec/template/spec/containers/0/args/-",
                                                   "value": f"--interval={self.interval}"}])}],
        }
        if self.components:
            document["components"] = [relative(c) for c in self.components]
        (self.directory / "kustomization.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
        return self.directory


def full(directory: Path, agent_images) -> Overlay:
    """Every opt-in check on, as an operator lists them: the node-dra-state overlay (the kubelet's
    checkpoints, PodResources, CDI specs) and the network-check component."""
    from vm import ROOT

    return Overlay(directory / "full", ROOT / "manifests" / "node-dra-state", agent_images.repository,
                   components=(ROOT / "manifests" / "components" / "network-check",))


@dataclass
class Agent:
    """The deployed agent on one booted node (conftest.Booted)."""

    booted: object
    address: str = ""  # the last agent pod's IP: its endpoints answer while the API server is away

    @property
    def plane(self):
        return self.booted.plane

    @property
    def node(self):
        return self.booted.node

    # -- the API's view -------------------------------------------------------------------------

    def kubectl_json(self, *args: str):
        result = self.plane.kubectl(*args, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def pod(self, ready: bool = False) -> dict | None:
        """The one live agent pod, or None (none, two during a rollout, or not Ready when asked)."""
        items = self.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/name={NAME}")["items"]
        live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        if len(live) != 1:
            return None
        pod = live[0]
        self.address = pod["status"].get("podIP") or self.address
        conditions = pod["status"].get("conditions", [])
        if ready and not any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return None
        return pod

    def rolled_out(self) -> bool:
        ds = self.kubectl_json("get", "daemonset", "-n", NAMESPACE, NAME)
        if ds is None:
            return False
        status = ds["status"]
        return status.get("observedGeneration") == ds["metadata"]["generation"] and \
            status.get("updatedNumberScheduled") == status.get("desiredNumberScheduled") == \
            status.get("numberReady") == 1

    def apply(self, overlay: Overlay) -> dict:
        """``kubectl apply -k``, then the rollout done and the new pod Ready (its readiness is a
        finished scan); the pod."""
        result = self.plane.kubectl("apply", "-k", str(overlay.write()))
        assert "Warning" not in result.stderr, result.stderr  # no Pod Security or deprecation warnings
        return self.wait_rollout()

    def wait_rollout(self) -> dict:
        with Watch(self.plane, f"/api/v1/namespaces/{NAMESPACE}/pods") as pods:
            return pods.until("the DaemonSet rolled out and its pod Ready",
                              lambda _: self.rolled_out() and self.pod(ready=True), stall=240,
                              detail=lambda: f"--- the agent's container logs\n{self.logs()}")

    def report(self) -> dict | None:
        return self.kubectl_json("get", "nodeenforcementreports.kubectl-dra.io", self.node.name)

    def reports(self) -> Watch:
        """A watch of this node's report: ``with agent.reports() as w: ... w.versions``. A wait on it
        that gets stuck says what the report held last."""
        return Watch(self.plane, REPORTS, name=self.node.name, describe=describe)

    def events(self, namespace: str) -> list[dict]:
        items = self.kubectl_json("get", "events.events.k8s.io", "-n", namespace)["items"]
        return [e for e in items if e.get("reportingController") == CONTROLLER]

    # -- the node's view -------------------------------------------------------------------------

    def http(self, path: str) -> str:
        """GET the agent's ``path`` (``/metrics``, ``/report``) from inside the node, at its pod IP (the
        one last seen: this needs no API server)."""
        if not self.address:
            self.pod()
        assert self.address, "no agent pod"
        answer = self.node.vm.call("http", url=f"http://{self.address}:8080{path}", timeout=20)
        assert answer["status"] == 200, answer
        return answer["body"]

    def metrics(self) -> dict[str, float]:
        values = {}
        for line in self.http("/metrics").splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values

    def scans(self) -> tuple[float, float]:
        """(scans finished, scans failed) so far, from its metrics."""
        values = self.metrics()
        done = values.get(f'dra_agent_scan_duration_seconds_count{{node="{self.node.name}"}}', 0.0)
        failed = sum(v for k, v in values.items() if k.startswith("dra_agent_scan_errors_total") and
                     'stage="scan"' in k)
        return done, failed

    def cpu(self) -> tuple[float, float]:
        """(scans finished, the agent process's CPU seconds), from one read of its metrics."""
        values = self.metrics()
        return (values.get(f'dra_agent_scan_duration_seconds_count{{node="{self.node.name}"}}', 0.0),
                values["dra_agent_cpu_seconds"])

    def scanned_since(self, mark: tuple[float, float], at_least: int = 1) -> dict:
        """Wait until ``at_least`` more scans finished (or failed) than at ``mark``; the /report then."""
        def more():
            done, failed = self.scans()
            return (done + failed) - sum(mark) >= at_least

        until(f"{at_least} scan(s) of the agent", more, stall=30 * INTERVAL, every=0.5)
        return json.loads(self.http("/report"))

    def logs(self, lines: int = 40) -> str:
        """Its container logs as the kubelet keeps them on the node (this API server cannot reach the
        kubelet for `kubectl logs`)."""
        result = self.node.shell(f"tail -n {lines} /var/log/pods/{NAMESPACE}_*/agent/*.log", check=False)
        return result["stdout"] + result["stderr"]


def describe(doc: dict) -> str:
    """What a report says in one line: the pods that are not Match, the claim findings, the sources."""
    status = doc.get("status", {})
    odd = {p["name"]: (p["verdict"], [(d.get("container"), d["file"], d["cause"]) for d in p["divergences"]])
           for p in status.get("pods", []) if p["verdict"] != "Match"}
    sources = {s["name"]: s["state"] for s in status.get("sources", [])}
    return (f"report at {status.get('observedAt')} by {status.get('agentVersion')}: {len(status.get('pods', []))} pods, "
            f"not Match: {odd or 'none'}; claim findings: {claim_findings(doc) or 'none'}; sources: {sources}")


def all_match(doc: dict) -> bool:
    return set(verdicts(doc).values()) == {"Match"} and claim_findings(doc) == []


def false_findings(versions: list[dict], *planted: str) -> list[tuple]:
    """Diverged pods and error/warning claim findings in any version, except pods named in
    ``planted`` (info is what a node does on its way: a CDI spec not yet rewritten after a reboot)."""
    found = []
    for doc in versions:
        for pod in doc.get("status", {}).get("pods", []):
            if pod["verdict"] == "Diverged" and pod["name"] not in planted:
                found.append((doc["status"]["observedAt"], pod["name"], pod["divergences"]))
        found += [(doc["status"]["observedAt"], *f) for f in claim_findings(doc) if f[2] != "info"]
    return found


def restart_count(pod: dict) -> int:
    return pod["status"]["containerStatuses"][0]["restartCount"]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
