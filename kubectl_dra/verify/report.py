"""The NodeEnforcementReport (docs/contracts.md §3.7, §4): one node's verdict on every pod's cgroups."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field

from kubectl_dra.document import API_VERSION, Document, Finding, Part, part
from kubectl_dra.versions import Versions

Verdict = Literal["Match", "Diverged", "Unknown"]
Severity = Literal["error", "warning", "info"]


@part
class Divergence:
    scope: Literal["pod", "container"]
    container: str | None = None
    file: str
    expected: str | None = None
    observed: str | None = None
    cause: str
    severity: Severity
    message: str = ""


@part
class PodVerdict:
    namespace: str
    name: str
    uid: str
    verdict: Verdict
    divergences: list[Divergence] = dataclasses.field(default_factory=list)
    cgroup: str | None = None  # the pod cgroup path that was read
    expected_hash: str | None = None  # of the prediction used: a changed pod predicts differently
    stale: bool = False  # set by verify: the pod changed since observedAt, so this verdict is not trusted
    processes: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # diverged container -> "pid name"
    exclusive_cpus: dict[str, str] = dataclasses.field(default_factory=dict)  # container -> cpuset the prediction assumed


@part
class ClaimOnNode:
    """One claim as this node holds it (the kubelet's checkpoint, its PodResources API) beside what
    the API says; ``findings`` are where the two disagree."""

    namespace: str
    name: str
    uid: str
    api: Literal["read", "missing", "unread"] | None = None  # the API's answer for this claim
    pods: list[str] = dataclasses.field(default_factory=list)  # pods on this node that use it (API)
    prepared: bool | None = None  # None: no source could tell
    prepared_for: list[str] = dataclasses.field(default_factory=list)  # namespace/name, or a UID for gone pods
    devices: list[str] = dataclasses.field(default_factory=list)  # driver/pool/device as prepared
    cdi_devices: list[str] = dataclasses.field(default_factory=list)
    sources: list[str] = dataclasses.field(default_factory=list)  # checkpoint, podResources
    findings: list[Finding] = dataclasses.field(default_factory=list)


@part
class NodeSource:
    """One node-side source of DRA state and whether it could be used."""

    name: Literal["draCheckpoint", "cdi", "podResources"]
    path: str
    state: Literal["read", "absent", "unreadable", "corrupt"]
    message: str = ""


class Summary(Part):
    pods: int = 0
    matched: int = 0
    diverged: int = 0
    unknown: int = 0
    claims: int = 0
    claim_findings: int = 0  # errors and warnings about claims (node-side DRA state)


class ReportStatus(Part):
    observed_at: str
    # the agent release that wrote it (absent from reports 0.1.0 wrote): during a rollout, which
    # nodes already run the new one
    agent_version: str | None = None
    cgroup_version: str = "v2"
    cgroup_driver: str | None = None
    runtime: str | None = None
    weight_formula: str | None = None
    kubelet_dra: bool | None = None
    summary: Summary = Field(default_factory=Summary)
    pods: list[PodVerdict] = Field(default_factory=list)
    message: str | None = None  # node-wide problems (unsupported cgroup version, unreadable root)
    node_options: dict = Field(default_factory=dict)  # everything the prediction used (for cross-checks)
    node_options_source: dict[str, str] = Field(default_factory=dict)  # option -> where its value came from
    unreported_pods: list[str] = Field(default_factory=list)  # set by verify: on the node now, not in the report
    claims: list[ClaimOnNode] = Field(default_factory=list)  # node-side DRA state, when a source was read
    sources: list[NodeSource] = Field(default_factory=list)  # the node's DRA sources and what came of each


class ReportMetadata(Part):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: str | None = None


class NodeEnforcementReport(Part):
    api_version: str = API_VERSION
    kind: str = "NodeEnforcementReport"
    metadata: ReportMetadata
    status: ReportStatus

    def summarize(self) -> "NodeEnforcementReport":
        pods = self.status.pods
        self.status.summary = Summary(pods=len(pods), matched=sum(p.verdict == "Match" for p in pods),
                                      diverged=sum(p.verdict == "Diverged" for p in pods),
                                      unknown=sum(p.verdict == "Unknown" for p in pods),
                                      claims=len(self.status.claims),
                                      claim_findings=sum(1 for c in self.status.claims for f in c.findings
                                                         if f.severity != "info"))
        return self

    def trusted_divergences(self) -> int:
        return sum(1 for p in self.status.pods if p.verdict == "Diverged" and not p.stale)

    def divergence_key(self) -> list:
        """What matters for republishing: everything but the observation time."""
        return [[(p.uid, p.verdict, [(d.scope, d.container, d.file, d.expected, d.observed, d.cause)
                                     for d in p.divergences]) for p in self.status.pods],
                [(c.namespace, c.name, c.uid, c.prepared, c.prepared_for, c.devices, [(f.code, f.message) for f in c.findings])
                 for c in self.status.claims],
                [(s.name, s.state, s.message) for s in self.status.sources]]



class VerifyResult(Document):
    """What ``verify -o json|yaml`` prints: the reports checked, the nodes that have none, and what
    could not be read (``problems``, as in every result document). Always this one shape, whether
    one node or many, so a script never branches on the node count."""

    kind: str = "NodeEnforcementReportList"
    items: list[NodeEnforcementReport] = []
    nodes_without_report: list[str] = []
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
