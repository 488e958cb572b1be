"""Storage views: what kube-scheduler's volume plugins read (VolumeBinding, VolumeZone,
VolumeRestrictions, NodeVolumeLimits) from PVCs, PVs, StorageClasses, CSINodes, CSIDrivers and
VolumeAttachments, and nothing more.

Node affinity of a PV stays the raw ``NodeSelector`` dict: it is matched by
:func:`kubectl_dra.pools.nodeselector.node_selector_matches`, which reads that shape.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from kubectl_dra.model.base import KubeObject, ResourceList, View, view
from kubectl_dra.model.pod import LabelSelector

STORAGE_GROUP = "storage.k8s.io"

# v1.BetaStorageClassAnnotation: read before spec.storageClassName (component-helpers storage/volume)
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

# The in-tree PV sources csi-translation-lib can translate, by spec key -> in-tree plugin name.
IN_TREE_SOURCES = {
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "azureDisk": "kubernetes.io/azure-disk",
    "azureFile": "kubernetes.io/azure-file",
    "cinder": "kubernetes.io/cinder",
    "portworxVolume": "kubernetes.io/portworx-volume",
    "vsphereVolume": "kubernetes.io/vsphere-volume",
}


@view
class VolumeResourceRequirements(View):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)


@view
class PersistentVolumeClaimSpec(View):
    access_modes: list[str] = Field(default_factory=list)
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = Field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None  # None: Filesystem
    volume_attributes_class_name: str | None = None


@view
class PersistentVolumeClaimStatus(View):
    phase: str = ""


@view
class PersistentVolumeClaim(KubeObject):
    KIND: ClassVar[str] = "PersistentVolumeClaim"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "persistentvolumeclaims"

    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)

    @property
    def storage_class(self) -> str:
        """``GetPersistentVolumeClaimClass``: the beta annotation first, then the spec; "" for none."""
        annotated = self.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        if annotated is not None:
            return annotated
        return self.spec.storage_class_name or ""


@view
class ObjectReference(View):
    name: str = ""
    namespace: str = ""
    uid: str = ""


@view
class VolumeNodeAffinity(View):
    required: dict[str, Any] | None = None  # a core/v1 NodeSelector, raw


@view
class CSIPersistentVolumeSource(View):
    driver: str = ""
    volume_handle: str = ""


@view
class PersistentVolumeSpec(View):
    capacity: ResourceList = Field(default_factory=dict)
    access_modes: list[str] = Field(default_factory=list)
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    csi: CSIPersistentVolumeSource | None = None
    in_tree: str = ""  # the in-tree plugin name of a translatable source (IN_TREE_SOURCES), "" for none

    @model_validator(mode="before")
    @classmethod
    def _in_tree(cls, data: Any) -> Any:
        if isinstance(data, dict) and "inTree" not in data and "in_tree" not in data:
            plugin = next((IN_TREE_SOURCES[k] for k in data if k in IN_TREE_SOURCES), "")
            if plugin:
                data = {**data, "inTree": plugin}
        return data


@view
class PersistentVolumeStatus(View):
    phase: str = ""


@view
class PersistentVolume(KubeObject):
    KIND: ClassVar[str] = "PersistentVolume"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "persistentvolumes"
    NAMESPACED: ClassVar[bool] = False

    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)

    @property
    def storage_class(self) -> str:
        """``GetPersistentVolumeClass``: the beta annotation first, then the spec."""
        annotated = self.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        return annotated if annotated is not None else self.spec.storage_class_name


@view
class TopologySelectorLabelRequirement(View):
    key: str = ""
    values: list[str] = Field(default_factory=list)


@view
class TopologySelectorTerm(View):
    match_label_expressions: list[TopologySelectorLabelRequirement] = Field(default_factory=list)


@view
class StorageClass(KubeObject):
    KIND: ClassVar[str] = "StorageClass"
    GROUP: ClassVar[str] = STORAGE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "storageclasses"
    NAMESPACED: ClassVar[bool] = False

    provisioner: str = ""
    volume_binding_mode: str | None = None  # the API server defaults it to Immediate
    allowed_topologies: list[TopologySelectorTerm] = Field(default_factory=list)


@view
class VolumeNodeResources(View):
    count: int | None = None


@view
class CSINodeDriver(View):
    name: str = ""
    node_id: str = Field(default="", alias="nodeID")
    allocatable: VolumeNodeResources | None = None
    topology_keys: list[str] = Field(default_factory=list)


@view
class CSINodeSpec(View):
    drivers: list[CSINodeDriver] = Field(default_factory=list)


@view
class CSINode(KubeObject):
    KIND: ClassVar[str] = "CSINode"
    GROUP: ClassVar[str] = STORAGE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "csinodes"
    NAMESPACED: ClassVar[bool] = False

    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)


@view
class CSIDriverSpec(View):
    storage_capacity: bool | None = None
    prevent_pod_scheduling_if_missing: bool | None = None


@view
class CSIDriver(KubeObject):
    KIND: ClassVar[str] = "CSIDriver"
    GROUP: ClassVar[str] = STORAGE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "csidrivers"
    NAMESPACED: ClassVar[bool] = False

    spec: CSIDriverSpec = Field(default_factory=CSIDriverSpec)


@view
class VolumeAttachmentSource(View):
    persistent_volume_name: str | None = None


@view
class VolumeAttachmentSpec(View):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = Field(default_factory=VolumeAttachmentSource)


@view
class VolumeAttachment(KubeObject):
    KIND: ClassVar[str] = "VolumeAttachment"
    GROUP: ClassVar[str] = STORAGE_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "volumeattachments"
    NAMESPACED: ClassVar[bool] = False

    spec: VolumeAttachmentSpec = Field(default_factory=VolumeAttachmentSpec)
