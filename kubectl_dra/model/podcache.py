"""The scheduler cache's view of every pod, decoded straight from a server's list pages.

"Why is it Pending" reads every pod of the cluster: 100,000 of them, 220 MB of JSON. Decoded into
pydantic views that alone takes 2.5 s on this project's reference machine; with msgspec's typed
decoder (the standard for fast typed JSON in Python) the same page takes a sixth of that. Only what
the scheduler's filters ask of a bound or nominated pod is kept, under the same attribute paths as
:class:`~kubectl_dra.model.pod.Pod`, so the scheduling code takes either.

Nothing is lost to speed: a page any item of which does not decode cleanly here (a quantity that does
not parse or is beyond what the scheduler can count, a field of another type) goes to the tolerant
path, which builds full :class:`Pod` views and records every invalid field, as any other list does.
Rare parts (affinity, the node-allocatable claim statuses, pod-level resources) are validated by the
pydantic views of model/pod.py when a pod has them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import msgspec

from kubectl_dra.model.base import KubeObject, adapter, shared_quantity
from kubectl_dra.model.pod import Affinity, NodeAllocatableClaimStatus, Pod, ResourceRequirements
from kubectl_dra.quantity import Quantity


def _quantity(kind: type, value: Any) -> Any:
    """msgspec's hook for :class:`Quantity` fields: the model's one object per text, or an error
    (the page then takes the tolerant path, which names the field)."""
    if kind is Quantity and isinstance(value, str):
        found = shared_quantity(value)
        if found is not None:
            return found
        raise ValueError(f"quantity {value!r} is invalid or beyond what the scheduler counts")
    raise NotImplementedError


class _Struct(msgspec.Struct, rename="camel", omit_defaults=True):
    pass


class Resources(_Struct):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class StatusResources(_Struct):
    requests: Optional[dict[str, Quantity]] = None
    limits: Optional[dict[str, Quantity]] = None


class ContainerPort(_Struct):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(_Struct):
    name: str
    resources: Resources = msgspec.field(default_factory=Resources)
    restart_policy: Optional[str] = None
    ports: list[ContainerPort] = []


class PersistentVolumeClaimSource(_Struct):
    claim_name: str = ""
    read_only: bool = False


class GCEPersistentDisk(_Struct):
    pd_name: str = ""
    read_only: bool = False


class AWSElasticBlockStore(_Struct):
    volume_id: str = msgspec.field(default="", name="volumeID")


class ISCSI(_Struct):
    iqn: str = ""
    read_only: bool = False


class RBD(_Struct):
    monitors: list[str] = []
    pool: str = "rbd"  # API default
    image: str = ""
    read_only: bool = False


class Volume(_Struct):
    """The sources the volume filters read (model/pod.py's Volume): a claim, an ephemeral claim,
    inline CSI, and the in-tree disks VolumeRestrictions compares and CSI migration translates."""

    name: str = ""
    persistent_volume_claim: Optional[PersistentVolumeClaimSource] = None
    ephemeral: Optional[dict[str, Any]] = None
    csi: Optional[dict[str, Any]] = None
    gce_persistent_disk: Optional[GCEPersistentDisk] = None
    aws_elastic_block_store: Optional[AWSElasticBlockStore] = None
    iscsi: Optional[ISCSI] = None
    rbd: Optional[RBD] = None
    azure_disk: Optional[dict[str, Any]] = None
    azure_file: Optional[dict[str, Any]] = None
    cinder: Optional[dict[str, Any]] = None
    portworx_volume: Optional[dict[str, Any]] = None
    vsphere_volume: Optional[dict[str, Any]] = None

    @property
    def source(self) -> str:
        """Which of those sources it is ("" for a source no filter reads: configMap, secret, ...)."""
        for key, field in _SOURCES:
            if getattr(self, field) is not None:
                return key
        return ""


_SOURCES = (("persistentVolumeClaim", "persistent_volume_claim"), ("ephemeral", "ephemeral"), ("csi", "csi"),
            ("gcePersistentDisk", "gce_persistent_disk"), ("awsElasticBlockStore", "aws_elastic_block_store"),
            ("iscsi", "iscsi"), ("rbd", "rbd"), ("azureDisk", "azure_disk"), ("azureFile", "azure_file"),
            ("cinder", "cinder"), ("portworxVolume", "portworx_volume"), ("vsphereVolume", "vsphere_volume"))


class SchedulingGroup(_Struct):
    pod_group_name: Optional[str] = None


class Spec(_Struct):
    node_name: Optional[str] = None
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, Quantity] = {}
    priority: Optional[int] = None
    volumes: list[Volume] = []
    scheduling_group: Optional[SchedulingGroup] = None
    raw_affinity: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="affinity")
    raw_resources: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="resources")
    affinity: Any = msgspec.field(default=None, name="kubectl-dra.io/affinity")  # the pydantic Affinity, when there is one
    resources: Any = msgspec.field(default=None, name="kubectl-dra.io/resources")  # pod-level ResourceRequirements

    def __post_init__(self) -> None:
        if self.raw_affinity and bytes(self.raw_affinity) != b"null":
            self.affinity = Affinity.model_validate(msgspec.json.decode(self.raw_affinity))
        if self.raw_resources and bytes(self.raw_resources) != b"null":
            self.resources = ResourceRequirements.model_validate(msgspec.json.decode(self.raw_resources))


class ContainerStatus(_Struct):
    name: str
    allocated_resources: Optional[dict[str, Quantity]] = None
    resources: Optional[StatusResources] = None


class Condition(_Struct):
    type: str = ""
    status: str = ""
    reason: str = ""


class Status(_Struct):
    phase: str = ""
    nominated_node_name: Optional[str] = None
    conditions: list[Condition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []
    resize: Optional[str] = None
    allocated_resources: Optional[dict[str, Quantity]] = None
    resources: Optional[StatusResources] = None
    raw_claim_statuses: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw,
                                             name="nodeAllocatableResourceClaimStatuses")
    node_allocatable_resource_claim_statuses: Any = msgspec.field(default=(), name="kubectl-dra.io/claimStatuses")

    def __post_init__(self) -> None:
        if self.raw_claim_statuses and bytes(self.raw_claim_statuses) != b"null":
            self.node_allocatable_resource_claim_statuses = adapter(list[NodeAllocatableClaimStatus]).validate_python(
                msgspec.json.decode(self.raw_claim_statuses))


class Metadata(_Struct):
    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    labels: dict[str, str] = {}
    deletion_timestamp: Optional[str] = None


class CachedPod(_Struct):
    """A pod as the scheduler's cache holds it; ``ReadRequest(Pod, view=CachedPod)``."""

    KIND: ClassVar[str] = "Pod"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "pods"
    NAMESPACED: ClassVar[bool] = True

    metadata: Metadata = msgspec.field(default_factory=Metadata)
    spec: Spec = msgspec.field(default_factory=Spec)
    status: Status = msgspec.field(default_factory=Status)

    # the same accessors as the pydantic views (KubeObject, Pod): they read only fields this view has
    name = KubeObject.name
    namespace = KubeObject.namespace
    uid = KubeObject.uid
    key = KubeObject.key
    node_name = Pod.node_name
    is_done = Pod.is_done
    all_containers = Pod.all_containers

    invalid_fields: ClassVar[tuple] = ()  # a page with anything invalid is never decoded into this view

    def invalid_resource_fields(self) -> list[str]:
        return []

    def invalid_under(self, *prefixes: str) -> list[str]:
        return []

    @classmethod
    def from_raw(cls, raw: dict, keep_raw: bool = True):
        """The tolerant path: a full :class:`Pod`, with its invalid fields recorded."""
        return Pod.from_raw(raw, keep_raw)

    @classmethod
    def decode_page(cls, data: bytes) -> list | None:
        """Every item of a list page, or None when any item does not decode cleanly."""
        try:
            page = _DECODER.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
            return None  # the tolerant path reads it again, and says what is wrong
        items = page.items or []
        return None if any(not item.metadata.name for item in items) else items


class _Page(msgspec.Struct):
    items: Optional[list[CachedPod]] = None


_DECODER = msgspec.json.Decoder(_Page, dec_hook=_quantity)
