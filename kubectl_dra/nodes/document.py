"""The result document of ``nodes/explain.py``: the model only, built there."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubectl_dra.document import Document, Finding, Part
from kubectl_dra.model.karpenter import NodePool
from kubectl_dra.versions import Versions


class DeviceSummary(Part):
    name: str
    node_allocatable: dict[str, dict[str, str]] = Field(default_factory=dict)
    allocated_to: list[str] = Field(default_factory=list)  # namespace/claim


class SliceSummary(Part):
    name: str
    driver: str
    pool: str
    devices: list[DeviceSummary] = Field(default_factory=list)
    reached_by: str = "nodeName"  # nodeName | allNodes | nodeSelector | perDeviceNodeSelection


class ClaimOnNode(Part):
    namespace: str
    name: str
    devices: list[str]
    pods: list[str]


class PodOnNode(Part):
    namespace: str
    name: str
    requests: dict[str, str]
    dra: dict[str, str] = Field(default_factory=dict)
    unknown: str | None = None  # why the requests could not be computed


class NodeRef(Part):
    name: str
    node_pool: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)


class NodeExplanation(Document):
    kind: str = "NodeExplanation"
    node: NodeRef
    resource_slices: list[SliceSummary] = Field(default_factory=list)
    claims: list[ClaimOnNode] = Field(default_factory=list)
    pods: list[PodOnNode] = Field(default_factory=list)
    requested: dict[str, str] = Field(default_factory=dict)  # what the scheduler counts on the node
    dra: dict[str, str] = Field(default_factory=dict)  # the DRA part of it
    free: dict[str, str] = Field(default_factory=dict)  # allocatable - requested
    overlays: list[dict[str, Any]] = Field(default_factory=list)  # overlays matching its NodePool x type
    predicted_resource_slices: list[dict[str, Any]] = Field(default_factory=list)  # proposal
    findings: list[Finding] = Field(default_factory=list)
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
