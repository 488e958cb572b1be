"""The NodeEnforcementReport (DESIGN §4.5): one node's verdict on every pod's cgroups."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field

from kubectl_dra.document import API_VERSION, Part, part

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


class Summary(Part):
    pods: int = 0
    matched: int = 0
    diverged: int = 0
    unknown: int = 0


class ReportStatus(Part):
    observed_at: str
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
                                      unknown=sum(p.verdict == "Unknown" for p in pods))
        return self

    def trusted_divergences(self) -> int:
        return sum(1 for p in self.status.pods if p.verdict == "Diverged" and not p.stale)

    def divergence_key(self) -> list:
        """What matters for republishing: everything but the observation time."""
        return [(p.uid, p.verdict, [(d.scope, d.container, d.file, d.expected, d.observed, d.cause)
                                    for d in p.divergences]) for p in self.status.pods]

