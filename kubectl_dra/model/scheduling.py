"""scheduling.k8s.io PodGroup (v1beta1 since 1.37, v1alpha3; v1alpha2 in 1.36)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from kubectl_dra.model.base import Condition, KubeObject, View, view

SCHEDULING_GROUP = "scheduling.k8s.io"


@view
class PodGroupResourceClaim(View):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@view
class PodGroupResourceClaimStatus(View):
    name: str
    resource_claim_name: str | None = None


@view
class PodGroupSpec(View):
    resource_claims: list[PodGroupResourceClaim] = Field(default_factory=list)


@view
class PodGroupStatus(View):
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


@view
class PodGroup(KubeObject):
    KIND: ClassVar[str] = "PodGroup"
    GROUP: ClassVar[str] = SCHEDULING_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1beta1", "v1alpha3", "v1alpha2")
    PLURAL: ClassVar[str] = "podgroups"

    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    @property
    def deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    def claim_object_name(self, claim: PodGroupResourceClaim) -> str | None:
        if claim.resource_claim_name:
            return claim.resource_claim_name
        for status in self.status.resource_claim_statuses:
            if status.name == claim.name:
                return status.resource_claim_name
        return None
