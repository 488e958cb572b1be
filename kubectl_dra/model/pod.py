"""Pod view: what DRA, the scheduler and the kubelet read from a pod.

Covers init and sidecar containers, container ``resources.claims``, pod-level ``spec.resources``,
``overhead``, ``spec.schedulingGroup`` and the node-allocatable claim statuses in both alpha
shapes (1.36 ``resources`` map, 1.37 ``mapping``/``overhead`` lists).
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

from pydantic import Field, ValidationError, model_validator

from kubectl_dra.model.base import (Condition, CoreResourceList, KubeObject, Qty, View, field_error,
                                    is_overcommit_allowed, view)


@view
class ContainerClaim(View):
    name: str
    request: str | None = None


@view
class ResourceRequirements(View):
    requests: CoreResourceList = Field(default_factory=dict)
    limits: CoreResourceList = Field(default_factory=dict)
    claims: list[ContainerClaim] = Field(default_factory=list)

    @model_validator(mode="after")
    def _requests_within_limits(self) -> "ResourceRequirements":
        """The API server's request-vs-limit rule; the request is what gets dropped (and named)."""
        errors = []
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            if limit is None:
                continue
            if request != limit and not is_overcommit_allowed(name):
                errors.append(field_error(("requests", name), f'Invalid value: "{request}": must be equal to '
                                          f"{name} limit of {limit}", request))
            elif request > limit:
                errors.append(field_error(("requests", name), f'Invalid value: "{request}": must be less than or '
                                          f"equal to {name} limit of {limit}", request))
        if errors:
            raise ValidationError.from_exception_data("ResourceRequirements", errors)
        return self


@view
class ContainerPort(View):
    container_port: int = 0
    host_port: int = 0  # 0: no host port (hostNetwork pods get container_port here by API defaulting)
    protocol: str = "TCP"
    host_ip: str = Field(default="", alias="hostIP")


@view
class ContainerRestartRule(View):
    action: str = ""  # Restart | RestartAllContainers (the latter needs a node that declares it)


@view
class VolumeMount(View):
    name: str = ""
    mount_path: str = ""
    bind_mount_options: list[str] = Field(default_factory=list)  # alpha VolumeBindMountOptions


@view
class Container(View):
    name: str
    image: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar
    restart_policy_rules: list[ContainerRestartRule] = Field(default_factory=list)
    ports: list[ContainerPort] = Field(default_factory=list)
    volume_mounts: list[VolumeMount] = Field(default_factory=list)


@view
class PodResourceClaim(View):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@view
class LabelSelectorRequirement(View):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


@view
class LabelSelector(View):
    """metav1.LabelSelector; ``None`` where the API allows it to be absent (matches nothing there)."""
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


@view
class NodeSelectorRequirement(View):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


@view
class NodeSelectorTerm(View):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


@view
class NodeSelector(View):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


@view
class PreferredSchedulingTerm(View):
    weight: int = 0
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


@view
class NodeAffinity(View):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(default_factory=list)


@view
class PodAffinityTerm(View):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


@view
class WeightedPodAffinityTerm(View):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = Field(default_factory=PodAffinityTerm)


@view
class PodAffinity(View):
    """Both podAffinity and podAntiAffinity; only the required terms filter."""
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(default_factory=list)


@view
class Affinity(View):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@view
class Toleration(View):
    key: str = ""
    operator: str = ""  # "" is Equal
    value: str = ""
    effect: str = ""  # "" matches every effect
    toleration_seconds: int | None = None


@view
class TopologySpreadConstraint(View):
    max_skew: int = 1
    topology_key: str = ""
    when_unsatisfiable: str = "DoNotSchedule"
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # None: Honor
    node_taints_policy: str | None = None  # None: Ignore
    match_label_keys: list[str] = Field(default_factory=list)


@view
class PersistentVolumeClaimVolumeSource(View):
    claim_name: str = ""
    read_only: bool = False


@view
class GCEPersistentDiskVolumeSource(View):
    pd_name: str = ""
    read_only: bool = False


@view
class AWSElasticBlockStoreVolumeSource(View):
    volume_id: str = Field(default="", alias="volumeID")


@view
class ISCSIVolumeSource(View):
    iqn: str = ""
    read_only: bool = False


@view
class RBDVolumeSource(View):
    monitors: list[str] = Field(default_factory=list)
    pool: str = "rbd"  # API default
    image: str = ""
    read_only: bool = False


@view
class Volume(View):
    """A pod volume: the name and the sources the scheduler's volume plugins look at (the other
    sources, configMap, secret, projected, ..., matter to none of them); the four disk sources are
    what VolumeRestrictions compares between pods on a node."""
    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    source: str = ""  # the one key besides name: configMap, csi, awsElasticBlockStore, ...

    @model_validator(mode="before")
    @classmethod
    def _source(cls, data: Any) -> Any:
        if isinstance(data, dict) and "source" not in data:
            data = {**data, "source": next((k for k in data if k != "name"), "")}
        return data


@view
class PodSchedulingGate(View):
    name: str = ""


@view
class PodSchedulingGroup(View):
    pod_group_name: str | None = None


@view
class PodSpec(View):
    node_name: str | None = None
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    resources: ResourceRequirements | None = None  # pod-level resources (PLR)
    overhead: CoreResourceList = Field(default_factory=dict)
    resource_claims: list[PodResourceClaim] = Field(default_factory=list)
    scheduling_group: PodSchedulingGroup | None = None
    restart_policy: str = "Always"
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    priority: int | None = None
    priority_class_name: str = ""
    scheduler_name: str = "default-scheduler"
    scheduling_gates: list[PodSchedulingGate] = Field(default_factory=list)
    volumes: list[Volume] = Field(default_factory=list)
    host_network: bool = False
    host_users: bool | None = None  # False: a user namespace
    ephemeral_containers: list[Container] = Field(default_factory=list)


@view
class PodResourceClaimStatus(View):
    name: str
    resource_claim_name: str | None = None


@view
class NodeAllocatableMapped(View):
    name: str
    quantity: Qty


@view
class NodeAllocatableOverheadEntry(View):
    name: str
    per_pod: Qty | None = None
    per_container: Qty | None = None


@view
class NodeAllocatableClaimStatus(View):
    """One entry of ``status.nodeAllocatableResourceClaimStatuses``.

    ``resource_claim_name`` is the ResourceClaim *object* name. 1.37 fills ``mapping`` and
    ``overhead``; 1.36 filled ``resources`` (which the kubelet did not enforce).
    """

    resource_claim_name: str
    containers: list[str] = Field(default_factory=list)
    mapping: list[NodeAllocatableMapped] = Field(default_factory=list)
    overhead: list[NodeAllocatableOverheadEntry] = Field(default_factory=list)
    resources: CoreResourceList = Field(default_factory=dict)

    @property
    def generation(self) -> str:
        """``v1.37`` (mapping/overhead), ``v1.36`` (resources) or ``empty``."""
        if self.mapping or self.overhead:
            return "v1.37"
        if self.resources:
            return "v1.36"
        return "empty"


@view
class ExtendedResourceRequestMapping(View):
    container_name: str
    resource_name: str
    request_name: str


@view
class ExtendedResourceClaimStatus(View):
    resource_claim_name: str
    request_mappings: list[ExtendedResourceRequestMapping] = Field(default_factory=list)


@view
class ResourceHealth(View):
    resource_id: str = Field(default="", alias="resourceID")  # a CDI ID, or driver/pool/device
    health: str = ""  # Healthy | Unhealthy | Unknown
    message: str | None = None


@view
class ResourceStatus(View):
    name: str = ""  # claim:<pod claim name>[/<request>]
    resources: list[ResourceHealth] = Field(default_factory=list)


@view
class StatusResources(View):
    """Requests and limits as a status reports them (in-place resize): absent is not empty, as
    component-helpers tells a nil list from an empty one. No request-vs-limit rule: the kubelet wrote it."""
    requests: CoreResourceList | None = None
    limits: CoreResourceList | None = None


@view
class ContainerStatus(View):
    name: str
    container_id: str | None = Field(default=None, alias="containerID")
    ready: bool = False
    restart_count: int = 0
    started: bool | None = None
    state: dict[str, Any] = Field(default_factory=dict)  # running | waiting | terminated
    allocated_resources_status: list[ResourceStatus] = Field(default_factory=list)  # the kubelet's device health
    allocated_resources: CoreResourceList | None = None  # in-place resize: what the kubelet admitted
    resources: StatusResources | None = None  # in-place resize: what the runtime applied

    @property
    def running(self) -> bool:
        return "running" in self.state

    @property
    def runtime_and_id(self) -> tuple[str, str] | None:
        """``containerd://abc`` -> ("containerd", "abc")."""
        if not self.container_id or "://" not in self.container_id:
            return None
        runtime, _, cid = self.container_id.partition("://")
        return runtime, cid


@view
class PodStatus(View):
    phase: str = ""
    qos_class: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    conditions: list[Condition] = Field(default_factory=list)
    resource_claim_statuses: list[PodResourceClaimStatus] = Field(default_factory=list)
    node_allocatable_resource_claim_statuses: list[NodeAllocatableClaimStatus] = Field(default_factory=list)
    extended_resource_claim_status: ExtendedResourceClaimStatus | None = None
    container_statuses: list[ContainerStatus] = Field(default_factory=list)
    init_container_statuses: list[ContainerStatus] = Field(default_factory=list)
    nominated_node_name: str | None = None
    resize: str | None = None  # deprecated since 1.33 (PodResizePending/InProgress conditions), still set by older kubelets
    allocated_resources: CoreResourceList | None = None  # pod-level in-place resize (DRA amounts included)
    resources: StatusResources | None = None  # pod-level in-place resize: what the pod cgroup has


@view
class Pod(KubeObject):
    KIND: ClassVar[str] = "Pod"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "pods"

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def node_name(self) -> str | None:
        return self.spec.node_name

    @property
    def is_done(self) -> bool:
        """The resourceclaim controller's ``isPodDone``: Succeeded or Failed, or deleted before it
        was ever scheduled. Such pods will not run (again), so their reservations are stale."""
        return self.status.phase in ("Succeeded", "Failed") or \
            (self.metadata.deletion_timestamp is not None and not self.spec.node_name)

    RESOURCE_FIELDS: ClassVar[tuple[str, ...]] = ("spec.containers", "spec.initContainers", "spec.resources", "spec.overhead",
                       "status.nodeAllocatableResourceClaimStatuses")

    def invalid_resource_fields(self) -> list[str]:
        """Invalid fields that requests, limits and cgroup values are computed from: while any
        exists, those numbers are unknown (never guessed from what is left)."""
        return self.invalid_under(*self.RESOURCE_FIELDS) if self.invalid_fields else []

    @property
    def pod_group_name(self) -> str | None:
        return self.spec.scheduling_group.pod_group_name if self.spec.scheduling_group else None

    def sidecars(self) -> list[Container]:
        return [c for c in self.spec.init_containers if c.restart_policy == "Always"]

    def all_containers(self) -> Iterator[Container]:
        """Init containers first (as the scheduler lists them), then regular containers."""
        yield from self.spec.init_containers
        yield from self.spec.containers

    def claim_object_name(self, pod_claim: PodResourceClaim) -> str | None:
        """The ResourceClaim object behind a pod claim reference, as the kubelet resolves it.

        A direct ``resourceClaimName`` is used as is; a template claim is looked up in
        ``status.resourceClaimStatuses`` (``None`` there means "no claim needed").
        """
        if pod_claim.resource_claim_name:
            return pod_claim.resource_claim_name
        for status in self.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name
        return None

    def uses_claims(self) -> bool:
        """Whether the pod can matter to a claim: it references one (in its spec, or through an
        extended resource), or belongs to a PodGroup (whose claims it shares). Only such pods can
        be reserved or be consumers, so claim listings hold no others."""
        return bool(self.spec.resource_claims) or self.status.extended_resource_claim_status is not None \
            or self.spec.scheduling_group is not None

    def referenced_claim_names(self) -> dict[str, str | None]:
        """Pod claim name -> ResourceClaim object name (None while the template claim is unmade)."""
        names = {pc.name: self.claim_object_name(pc) for pc in self.spec.resource_claims}
        ext = self.status.extended_resource_claim_status
        if ext is not None:
            names.setdefault("<extended-resources>", ext.resource_claim_name)
        return names

    def containers_using(self, pod_claim_name: str) -> list[str]:
        return [c.name for c in self.all_containers() if any(cl.name == pod_claim_name for cl in c.resources.claims)]

    def containers_using_object(self, claim_name: str) -> list[str]:
        """Containers that use the ResourceClaim object ``claim_name``: through a pod claim, or as
        the claim the scheduler made for their extended resources (``extendedResourceClaimStatus``)."""
        pod_claims = {pc.name for pc in self.spec.resource_claims if self.claim_object_name(pc) == claim_name}
        ext = self.status.extended_resource_claim_status
        mapped = {m.container_name for m in ext.request_mappings} \
            if ext is not None and ext.resource_claim_name == claim_name else set()
        return [c.name for c in self.all_containers()
                if c.name in mapped or any(cl.name in pod_claims for cl in c.resources.claims)]

    def container_status(self, name: str) -> ContainerStatus | None:
        for status in (*self.status.init_container_statuses, *self.status.container_statuses):
            if status.name == name:
                return status
        return None


@view
class _NoClaimsSpec(View):
    resource_claims: list = Field(default_factory=list, max_length=0)
    scheduling_group: None = None


@view
class _NoClaimsStatus(View):
    extended_resource_claim_status: None = None


@view
class PodWithoutClaims(View):
    """What validates only a pod that :meth:`Pod.uses_claims` would drop: no ``resourceClaims`` (absent or
    empty), no ``schedulingGroup``, no ``extendedResourceClaimStatus``. A list that keeps only claim users
    validates this first, so the thousands of pods that cannot matter to a claim are never built as
    :class:`Pod`; any other pod, a malformed one included, fails here and is validated in full."""

    spec: _NoClaimsSpec = Field(default_factory=_NoClaimsSpec)
    status: _NoClaimsStatus = Field(default_factory=_NoClaimsStatus)

