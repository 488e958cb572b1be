"""Owner kinds that can hold pods: what a reservedFor entry of another kind may point at (never a
Kubernetes controller; PodGroup reservations are KEP-5729, `DRAWorkloadResourceClaims`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from kubectl_dra.model.base import KubeObject, View, view


@view
class WorkloadSpec(View):
    replicas: int | None = None
    selector: dict[str, Any] | None = None


@view
class _AppsObject(KubeObject):
    GROUP: ClassVar[str] = "apps"
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)

    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: dict[str, Any] = Field(default_factory=dict)


@view
class Deployment(_AppsObject):
    KIND: ClassVar[str] = "Deployment"
    PLURAL: ClassVar[str] = "deployments"


@view
class ReplicaSet(_AppsObject):
    KIND: ClassVar[str] = "ReplicaSet"
    PLURAL: ClassVar[str] = "replicasets"


@view
class StatefulSet(_AppsObject):
    KIND: ClassVar[str] = "StatefulSet"
    PLURAL: ClassVar[str] = "statefulsets"


@view
class Job(KubeObject):
    KIND: ClassVar[str] = "Job"
    GROUP: ClassVar[str] = "batch"
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "jobs"

    spec: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] = Field(default_factory=dict)
