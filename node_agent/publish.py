"""Publishing a scan: the NodeEnforcementReport object, Events on divergent pods, metrics.

The report's status is written only when its content (not its timestamp) changed, and at most
once per ``min_interval`` seconds; Events are named after the divergence they describe, so the
same divergence is never reported twice (a second create is a harmless 409).
"""

from __future__ import annotations

import hashlib
import time
import collections
from datetime import datetime, timezone

import psutil
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from kubectl_dra import __version__
from kubectl_dra.errors import ApiError
from kubectl_dra.verify.report import NodeEnforcementReport, PodVerdict
from kubectl_dra.text import plural

GROUP, VERSION, PLURAL = "kubectl-dra.io", "v1alpha1", "nodeenforcementreports"
REPORTS_PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
CONTROLLER = "kubectl-dra.io/node-agent"
ERROR_STAGES = ("scan", "publish", "internal")  # dra_agent_scan_errors_total{stage}: node_agent.service counts them


class Metrics:
    """Prometheus metrics; label names follow kube-state-metrics (namespace, pod, node, uid)."""

    def __init__(self, node: str):
        self.node = node
        self.registry = CollectorRegistry()
        Gauge("dra_agent_build_info", "kubectl-dra node agent build", ["version"],
              registry=self.registry).labels(__version__).set(1)
        self.pods = Gauge("dra_agent_pods", "Pods on this node by verdict", ["node", "verdict"], registry=self.registry)
        self.divergences = Gauge("dra_agent_pod_divergences", "Divergent cgroup files per pod and cause",
                                 ["node", "namespace", "pod", "uid", "cause", "severity"], registry=self.registry)
        self.duration = Histogram("dra_agent_scan_duration_seconds", "Time to read and compare the node's cgroups",
                                  ["node"], registry=self.registry,
                                  buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.errors = Counter("dra_agent_scan_errors_total", "Failed scans or publications by stage",
                              ["node", "stage"], registry=self.registry)
        for stage in ERROR_STAGES:  # from 0, so the first failure is an increase() and not a new series
            self.errors.labels(node, stage)
        self.claim_findings = Gauge("dra_agent_claim_findings", "Findings about DRA claims on this node (the kubelet's "
                                    "checkpoint, CDI specs, PodResources against the API), by claim and code",
                                    ["node", "namespace", "claim", "code", "severity"], registry=self.registry)
        self.sources = Gauge("dra_agent_node_source_readable", "Whether a node-side DRA source was read (1), absent "
                             "(0) or unreadable or corrupt (-1)", ["node", "source"], registry=self.registry)
        self.last_scan = Gauge("dra_agent_last_scan_timestamp_seconds", "When the last scan finished",
                               ["node"], registry=self.registry)
        # a scan that succeeds says nothing about the report object: the write can fail (RBAC, the
        # CRD missing, the API server away) while scans go on, and `kubectl dra verify` then reads a
        # stale report. 0 until the first write; absent when the agent does not publish (--no-publish).
        self.last_publish = Gauge("dra_agent_last_publish_timestamp_seconds",
                                  "When the NodeEnforcementReport object was last known current: written, or "
                                  "unchanged since the agent's last write (0: not written yet)",
                                  ["node"], registry=self.registry)
        # what the agent costs the API server: the watches it keeps open, and the lists it had to
        # make (first reads, a claim the node starts using, a watch that failed or expired)
        self.watches = Gauge("dra_agent_api_watches", "Watches the agent keeps open (its node's pods, its Node, "
                             "one per claim in use)", ["node"], registry=self.registry)
        self.lists = Gauge("dra_agent_api_lists", "Lists the agent made since it started (each read is listed "
                           "once, then watched)", ["node"], registry=self.registry)
        self.registry.register(_ProcessCollector())

    def record(self, report: NodeEnforcementReport, seconds: float) -> None:
        self.duration.labels(self.node).observe(seconds)
        self.last_scan.labels(self.node).set(time.time())
        for verdict in ("Match", "Diverged", "Unknown"):
            self.pods.labels(self.node, verdict).set(sum(p.verdict == verdict for p in report.status.pods))
        self.divergences.clear()
        for pod in report.status.pods:
            for (cause, severity), n in collections.Counter((d.cause, d.severity) for d in pod.divergences).items():
                self.divergences.labels(self.node, pod.namespace, pod.name, pod.uid, cause, severity).set(n)
        self.claim_findings.clear()
        for claim in report.status.claims:
            for (code, severity), n in collections.Counter((f.code, f.severity) for f in claim.findings).items():
                self.claim_findings.labels(self.node, claim.namespace, claim.name, code, severity).set(n)
        for source in report.status.sources:
            self.sources.labels(self.node, source.name).set({"read": 1, "absent": 0}.get(source.state, -1))


class _ProcessCollector:
    """The agent's own CPU and memory, through psutil."""

    def collect(self):
        process = psutil.Process()
        with process.oneshot():
            memory = process.memory_info().rss
            cpu = process.cpu_times()
        yield GaugeMetricFamily("dra_agent_resident_memory_bytes", "Agent resident memory", value=memory)
        yield GaugeMetricFamily("dra_agent_cpu_seconds", "Agent CPU time (user+system)", value=cpu.user + cpu.system)


class Publisher:
    """Writes the report object and Events through a kube Session."""

    def __init__(self, session, node: str, node_uid: str | None = None, min_interval: float = 10.0):
        self.session, self.node, self.node_uid = session, node, node_uid
        self.min_interval = min_interval
        self._published_key = None
        self._published_at = 0.0
        self._events: set[str] = set()

    def current(self, report: NodeEnforcementReport) -> bool:
        """Whether the object in the API holds this report's content (this agent's last write had
        the same divergence key); False while a changed report waits for ``min_interval``."""
        return self._published_key is not None and report.divergence_key() == self._published_key

    def report(self, report: NodeEnforcementReport, *, force: bool = False) -> bool:
        """Create or update the report; returns whether anything was written."""
        key = report.divergence_key()
        now = time.monotonic()
        if not force and key == self._published_key:
            return False
        if not force and now - self._published_at < self.min_interval:
            return False
        document = report.model_dump(mode="json", by_alias=True)
        path = f"{REPORTS_PATH}/{self.node}"
        status = {"status": document["status"]}
        if self._published_key is None:  # the first write: the object may not exist yet
            try:
                self.session.get(path)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                self._create(document)
        try:  # after that, one request per change: the object is known to exist
            self._write_status(path, status)
        except ApiError as exc:
            if exc.status != 404:
                raise
            self._create(document)  # someone deleted it meanwhile
            self._write_status(path, status)
        self._published_key, self._published_at = key, now
        return True

    def _write_status(self, path: str, status: dict) -> None:
        self.session.request("PATCH", f"{path}/status", body=status, content_type="application/merge-patch+json")

    def _create(self, document: dict) -> None:
        metadata = dict(document["metadata"])
        if self.node_uid:
            metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.node,
                                            "uid": self.node_uid}]
        try:
            self.session.request("POST", REPORTS_PATH, body={"apiVersion": document["apiVersion"],
                                                             "kind": document["kind"], "metadata": metadata})
        except ApiError as create:
            if create.status == 404:
                raise ApiError(f"the NodeEnforcementReport CRD ({PLURAL}.{GROUP}) is not installed: "
                               "kubectl apply -f manifests/agent/crd.yaml", status=404) from None
            if create.status != 409:  # created meanwhile (another agent process of this node)
                raise

    def events(self, report: NodeEnforcementReport) -> int:
        """One Warning Event per new divergence set of a pod, and per new finding about a claim
        (regarding the ResourceClaim, reason = the finding's code); returns how many were created."""
        created = 0
        for pod in report.status.pods:
            if pod.verdict != "Diverged":
                continue
            name = _event_name(pod)
            if name in self._events:
                continue
            body = _event(pod, self.node, name)
            try:
                self.session.request("POST", f"/apis/events.k8s.io/v1/namespaces/{pod.namespace}/events", body=body)
                created += 1
            except ApiError as exc:
                if exc.status != 409:
                    raise
            self._events.add(name)
        for claim in report.status.claims:
            for finding in claim.findings:
                if finding.severity == "info":
                    continue
                name = _claim_event_name(claim, finding)
                if name in self._events:
                    continue
                try:
                    self.session.request("POST", f"/apis/events.k8s.io/v1/namespaces/{claim.namespace}/events",
                                         body=_claim_event(claim, finding, self.node, name))
                    created += 1
                except ApiError as exc:
                    if exc.status != 409:
                        raise
                self._events.add(name)
        return created


def _event_name(pod: PodVerdict) -> str:
    signature = "|".join(f"{d.scope}/{d.container}/{d.file}/{d.expected}/{d.observed}/{d.cause}"
                         for d in pod.divergences if d.severity != "info")
    return f"{pod.name}.dra-{hashlib.sha256((pod.uid + signature).encode()).hexdigest()[:12]}"


def _event(pod: PodVerdict, node: str, name: str) -> dict:
    real = [d for d in pod.divergences if d.severity != "info"]
    parts = [f"{d.container or 'pod'} {d.file}: expected {d.expected}, found {d.observed} ({d.cause})" for d in real]
    note = f"{plural(len(real), 'cgroup value')} {'differs' if len(real) == 1 else 'differ'} from the prediction: " + "; ".join(parts)
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": pod.namespace},
        "eventTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": CONTROLLER, "reportingInstance": node,
        "action": "Verify", "reason": "CgroupDivergence", "type": "Warning",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "note": note[:1024],
    }


def _claim_event_name(claim, finding) -> str:
    signature = f"{claim.uid}|{finding.code}|{finding.message}"
    return f"{claim.name}.dra-{hashlib.sha256(signature.encode()).hexdigest()[:12]}"


def _claim_event(claim, finding, node: str, name: str) -> dict:
    regarding = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "name": claim.name,
                 "namespace": claim.namespace}
    if claim.uid:
        regarding["uid"] = claim.uid
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": claim.namespace},
        "eventTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": CONTROLLER, "reportingInstance": node,
        "action": "Verify", "reason": finding.code, "type": "Warning",
        "regarding": regarding, "note": f"on node {node}: {finding.message}"[:1024],
    }
