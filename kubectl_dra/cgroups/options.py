"""Node options that decide what the kubelet and runtime write (docs/contracts.md §7)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kubectl_dra.document import Part
from kubectl_dra.duration import parse_ns
from kubectl_dra.errors import InputError
from kubectl_dra.quantity import Quantity
from kubectl_dra.versions import KUBELET, MODELLED_MINOR, known, minor_of, older

GI, MI = 1 << 30, 1 << 20
LEGACY_THROTTLING = "0.9"  # previousDefaultMemoryThrottlingFactor: the default up to 1.36 (defaults.go of 1.34-1.36)


class NodeOptions(Part):
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    runtime: Literal["containerd", "crio"] = "containerd"
    weight_formula: Literal["linear", "quadratic"] = "quadratic"  # containers; pods are always linear
    cpu_cfs_period: int = 100000  # µs
    cpu_cfs_quota: bool = True  # kubelet cpuCFSQuota: false leaves every quota unset
    cpu_manager_policy: Literal["none", "static"] = "none"
    hugepage_sizes: list[int] = Field(default_factory=lambda: [2 * MI, GI])  # bytes, host page sizes
    kubelet_dra: bool = True
    kubelet_cgroup_root: str = "/"
    memory_qos: Literal["off", "none", "tiered", "legacy"] = "off"  # MemoryQoS gate; reservation policy
    # kubelet memoryThrottlingFactor; None: unset, so no memory.high (the 1.37 default, confirmed on a real
    # v1.37.2 kubelet); kubelets up to 1.36 defaulted it to 0.9 (LEGACY_THROTTLING)
    memory_throttling_factor: str | None = None
    node_allocatable_memory: int | None = None  # bytes; memory.high of containers without a limit
    runtime_hugetlb: bool | None = None  # the runtime applies container hugepage limits; None: its default
    # the kubelet's release (status.nodeInfo.kubeletVersion): the rules of 1.34 to 1.36 where they differ
    # (docs/kubernetes/versions.md §5); None: not known, 1.37's
    kubelet_version: str | None = None

    @property
    def kubelet_minor(self) -> int:
        minor = minor_of(self.kubelet_version)
        return minor if known(minor) else MODELLED_MINOR

    @property
    def applies_container_hugetlb(self) -> bool:
        """containerd's CRI ``disable_hugetlb_controller`` is true in every release, so it skips
        container hugepage limits unless configured; CRI-O applies them whenever it can."""
        return self.runtime_hugetlb if self.runtime_hugetlb is not None else self.runtime == "crio"

    @property
    def throttling_factor(self) -> str | None:
        """The factor memory.high is computed with, or None when the kubelet sets no memory.high."""
        if self.memory_throttling_factor is not None:
            return self.memory_throttling_factor
        if self.memory_qos == "legacy" or (self.memory_qos != "off" and older(KUBELET, "Memory QoS", self.kubelet_minor)):
            return LEGACY_THROTTLING  # the kubelet's own default up to 1.36
        return None

    @property
    def writes_rsvd(self) -> bool:
        """runc (containerd's default) writes hugetlb.<size>.rsvd.max; crun (CRI-O's) does not."""
        return self.runtime == "containerd"




def parse_period(text: str) -> int:
    """``--cpu-cfs-period``: a Go duration (100ms, 5ms, 100000us, 1h30m, 0) -> microseconds, within
    the kubelet's range for cpuCFSQuotaPeriod (1ms to 1s, inclusive)."""
    try:
        total = parse_ns(text.strip())
    except ValueError:
        raise InputError(f'"{text}": not a duration: use one such as 100ms or 5ms') from None
    if not 1_000_000 <= total <= 1_000_000_000:
        raise InputError(f'"{text}": out of range: the kubelet takes a CFS period from 1ms to 1s, inclusive')
    if total % 1000:
        raise InputError(f'"{text}": must be a whole number of microseconds (the cgroup file counts them)')
    return int(total // 1000)


def parse_hugepage_sizes(text: str) -> list[int]:
    """``--hugepage-sizes 2Mi,1Gi`` -> page sizes in bytes ("" or "none" = no huge pages)."""
    if text.strip().lower() in ("", "none"):
        return []
    sizes = []
    for part in text.split(","):
        try:
            size = Quantity.parse(part.strip()).value()
        except ValueError:
            raise InputError(f'entry "{part.strip()}": use sizes like 2Mi,1Gi') from None
        if size <= 0 or size & (size - 1):
            raise InputError(f'entry "{part.strip()}": a page size is a power of two')
        sizes.append(size)
    return sorted(set(sizes))


def from_node(node) -> dict[str, object]:
    """What a Node object says about the options (runtime, huge page sizes, whether the kubelet
    applies DRA), for options the user did not set."""
    detected: dict[str, object] = {}
    if node is None:
        return detected
    runtime = node.status.node_info.container_runtime_version
    if runtime.startswith("containerd://"):
        detected["runtime"] = "containerd"
    elif runtime.startswith("cri-o://"):
        detected["runtime"] = "crio"
    sizes = []
    for name in node.status.capacity:
        if name.startswith("hugepages-"):
            try:
                sizes.append(Quantity.parse(name[len("hugepages-"):]).value())
            except ValueError:
                continue
    if sizes:
        detected["hugepage_sizes"] = sorted(set(sizes))
    if "memory" in node.status.capacity:  # Memory QoS: memory.high of containers without a limit
        detected["node_allocatable_memory"] = node.status.capacity["memory"].value()
    if node.status.node_info.kubelet_version:
        detected["kubelet_version"] = node.status.node_info.kubelet_version
    dra = kubelet_dra_from_node(node)
    if dra is not None:
        detected["kubelet_dra"] = dra[0]
    return detected


DRA_FEATURE = "DRANodeAllocatableResources"
# The kubelet's "node allocatable" for memory.high is capacity minus kube-reserved and system-reserved
# (GetNodeAllocatableAbsolute): huge pages and the eviction threshold are not subtracted, so it is not
# status.allocatable. Reserved memory is not in the API.
CAPACITY_SOURCE = ("node {node}: status.capacity memory (the kubelet subtracts kube-reserved and system-reserved, "
                   "which the API does not show: assumed none)")


def kubelet_dra_from_node(node) -> tuple[bool, str] | None:
    """Whether the node's kubelet applies node-allocatable DRA to cgroups, and how we know.

    ``status.declaredFeatures`` lists DRANodeAllocatableResources exactly when the kubelet's gate
    is on (KEP-5328; always reported from 1.37, where the gate is alpha and off by default). A 1.36
    kubelet accounts DRA for admission only."""
    features = node.status.declared_features
    version = minor_of(node.status.node_info.kubelet_version)
    if features:
        on = DRA_FEATURE in features
        return on, f"node {node.name}: status.declaredFeatures {'lists' if on else 'lacks'} {DRA_FEATURE}"
    if version is not None and version < 37:
        return False, f"node {node.name}: kubelet {node.status.node_info.kubelet_version} (1.36 does not apply DRA to cgroups)"
    if version is not None:
        return False, (f"node {node.name}: kubelet {node.status.node_info.kubelet_version} declares no features, so not "
                       f"{DRA_FEATURE}")
    return None


def option_key(name: str) -> str:
    """The JSON key of a node option (``cpu_manager_policy`` -> ``cpuManagerPolicy``)."""
    return NodeOptions.model_fields[name].alias or name


def resolve(given: dict[str, object], node=None, observed: dict[str, object] | None = None,
            observed_source: str | dict[str, str] = "cgroup tree") -> tuple[NodeOptions, dict[str, str]]:
    """Flags win, then what the node itself shows (its cgroup tree and kubelet state; agent only),
    then the Node object, then defaults; returns the options and where each one came from.
    ``observed_source`` names the node-side source, per option when it is a dict."""
    detected = from_node(node)
    dra_reason = kubelet_dra_from_node(node) if node is not None else None
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for name in NodeOptions.model_fields:
        key = option_key(name)  # camelCase, like every key of the JSON documents
        if given.get(name) is not None:
            values[name], sources[key] = given[name], "flag"
        elif observed and observed.get(name) is not None:
            where = observed_source.get(name, "node") if isinstance(observed_source, dict) else observed_source
            values[name], sources[key] = observed[name], where
        elif name in detected:
            values[name] = detected[name]
            sources[key] = dra_reason[1] if name == "kubelet_dra" and dra_reason else \
                CAPACITY_SOURCE.format(node=node.name) if name == "node_allocatable_memory" else f"node {node.name}"
        else:
            sources[key] = "default"
    options = NodeOptions(**values)
    if options.runtime_hugetlb is None:  # the runtime's own default, said as such
        options = options.model_copy(update={"runtime_hugetlb": options.applies_container_hugetlb})
        sources["runtimeHugetlb"] = ("default for CRI-O: applies container hugepage limits" if options.runtime == "crio"
                                     else "default for containerd: disable_hugetlb_controller = true")
    return options, sources
