"""Node view: labels, capacity/allocatable, runtime and kubelet versions, declared features."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from kubectl_dra.model.base import Condition, CoreResourceList, KubeObject, View, view


@view
class NodeSystemInfo(View):
    kubelet_version: str = ""
    container_runtime_version: str = ""
    kernel_version: str = ""
    os_image: str = ""
    architecture: str = ""


@view
class Taint(View):
    key: str = ""
    value: str = ""
    effect: str = ""  # NoSchedule | PreferNoSchedule | NoExecute
    time_added: str | None = None

    def __str__(self) -> str:
        """As kubectl and the scheduler print one: ``key=value:Effect`` (``key:Effect`` without a value)."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@view
class NodeSpec(View):
    provider_id: str | None = Field(default=None, alias="providerID")
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False


@view
class NodeStatus(View):
    capacity: CoreResourceList = Field(default_factory=dict)
    allocatable: CoreResourceList = Field(default_factory=dict)
    node_info: NodeSystemInfo = Field(default_factory=NodeSystemInfo)
    declared_features: list[str] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


@view
class Node(KubeObject):
    KIND: ClassVar[str] = "Node"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "nodes"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)
