"""The result document of ``claims/explain.py``: the model only, built there."""

from __future__ import annotations

from pydantic import Field

from kubectl_dra.claims.reservations import ConsumerView, ReservationView, consumers
from kubectl_dra.claims.views import ClaimRef, DeviceView
from kubectl_dra.allocation.document import Allocation
from kubectl_dra.document import Document, Finding, Part
from kubectl_dra.versions import Versions


class NodeView(Part):
    """The claim as one node's agent last saw it (its NodeEnforcementReport's ``status.claims``)."""

    node: str
    observed_at: str | None = None
    prepared: bool | None = None
    prepared_for: list[str] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list)
    cdi_devices: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class ClaimExplanation(Document):
    kind: str = "ClaimExplanation"
    claim: ClaimRef
    devices: list[DeviceView] = Field(default_factory=list)
    reserved_for: list[ReservationView] = Field(default_factory=list)
    reserved_for_limit: int = 256
    consumers: list[ConsumerView] = Field(default_factory=list)
    node_view: list[NodeView] = Field(default_factory=list)  # from agents' reports, when they have the claim
    allocation: Allocation | None = None  # a claim not allocated yet: what the allocator would do now
    findings: list[Finding] = Field(default_factory=list)
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
