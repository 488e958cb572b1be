"""The result document of ``pods/explain.py``: the model only, built there."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.predict import ContainerCgroup, CgroupFiles
from kubectl_dra.allocation.document import Allocation
from kubectl_dra.document import Document, Finding, Part
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.overlays.document import KarpenterLaunch
from kubectl_dra.scheduling.document import Scheduling
from kubectl_dra.versions import Versions


class PodRef(Part):
    namespace: str
    name: str
    uid: str
    node: str | None = None
    qos_class: str
    phase: str | None = None


class ClaimAmounts(Part):
    name: str  # ResourceClaim object name
    pod_claim_name: str | None = None
    containers: list[str] = Field(default_factory=list)
    mapping: dict[str, str] = Field(default_factory=dict)
    overhead: dict[str, dict[str, str]] = Field(default_factory=dict)
    source: Literal["podStatus", "computed"]
    generation: str = "v1.37"
    devices: list[str] = Field(default_factory=list)
    resources: dict[str, str] = Field(default_factory=dict)  # 1.36 shape, when recorded so
    kubelet_applies: bool = True


class SchedulerView(Part):
    requests: dict[str, str] = Field(default_factory=dict)
    dra: dict[str, str] = Field(default_factory=dict)  # the part of requests that DRA adds
    note: str | None = None  # why requests are empty or unknown (never silently empty)


class CgroupsView(Part):
    pod: CgroupFiles
    containers: list[ContainerCgroup] = Field(default_factory=list)
    exclusive_cpus: dict[str, str] = Field(default_factory=dict)  # container -> cpuset ("" = the policy's rule)
    unknown: str | None = None  # why no value can be predicted


class PodExplanation(Document):
    kind: str = "PodExplanation"
    pod: PodRef
    claims: list[ClaimAmounts] = Field(default_factory=list)
    scheduler: SchedulerView
    cgroups: CgroupsView
    findings: list[Finding] = Field(default_factory=list)
    node_options: NodeOptions
    node_options_source: dict[str, str] = Field(default_factory=dict)  # option -> flag | node | default
    allocation: Allocation | None = None  # an unbound pod: what the allocator would do with its claims now
    scheduling: "Scheduling | None" = None  # an unbound pod: every filter the scheduler runs, node by node
    karpenter: "KarpenterLaunch | None" = None  # no node can take it: what Karpenter would launch
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
