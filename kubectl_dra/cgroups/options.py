"""Node options that decide what the kubelet and runtime write (DESIGN §4.2)."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Literal

from pydantic import Field

from kubectl_dra.document import Part
from kubectl_dra.errors import InputError
from kubectl_dra.quantity import Quantity

GI, MI = 1 << 30, 1 << 20


class NodeOptions(Part):
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    runtime: Literal["containerd", "crio"] = "containerd"
    weight_formula: Literal["linear", "quadratic"] = "quadratic"  # containers; pods are always linear
    cpu_cfs_period: int = 100000  # µs
    hugepage_sizes: list[int] = Field(default_factory=lambda: [2 * MI, GI])  # bytes, host page sizes
    kubelet_dra: bool = True
    kubelet_cgroup_root: str = "/"
    memory_qos: Literal["off", "legacy", "tiered"] = "off"
    memory_throttling_factor: str = "0.9"
    node_allocatable_memory: int | None = None  # bytes; memory.high of containers without a limit

    @property
    def throttling(self) -> Fraction:
        return Fraction(self.memory_throttling_factor)

    @property
    def writes_rsvd(self) -> bool:
        """runc (containerd's default) writes hugetlb.<size>.rsvd.max; crun (CRI-O's) does not."""
        return self.runtime == "containerd"


def parse_period(text: str) -> int:
    """``--cpu-cfs-period``: a Go-style duration (100ms, 5ms, 100000us) -> microseconds."""
    units = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            number = text[: -len(suffix)]
            try:
                value = Fraction(number) * units[suffix]
            except (ValueError, ZeroDivisionError):
                break
            if value.denominator != 1 or not 1000 <= value <= 1_000_000:
                raise InputError(f'invalid --cpu-cfs-period "{text}": must be a whole number of '
                                 "microseconds between 1ms and 1s")
            return int(value)
    raise InputError(f'invalid --cpu-cfs-period "{text}": use a duration such as 100ms or 5ms')


def parse_hugepage_sizes(text: str) -> list[int]:
    """``--hugepage-sizes 2Mi,1Gi`` -> page sizes in bytes ("" or "none" = no huge pages)."""
    if text.strip().lower() in ("", "none"):
        return []
    sizes = []
    for part in text.split(","):
        try:
            size = Quantity.parse(part.strip()).value()
        except ValueError:
            raise InputError(f'invalid --hugepage-sizes entry "{part.strip()}": use sizes like 2Mi,1Gi') from None
        if size <= 0 or size & (size - 1):
            raise InputError(f'invalid --hugepage-sizes entry "{part.strip()}": a page size is a power of two')
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
    if "memory" in node.status.allocatable:  # Memory QoS: memory.high of containers without a limit
        detected["node_allocatable_memory"] = node.status.allocatable["memory"].value()
    version = _minor(node.status.node_info.kubelet_version)
    if version is not None and version < 37:
        detected["kubelet_dra"] = False  # 1.36 kubelets account DRA for admission only
    return detected


def _minor(version: str) -> int | None:
    match = re.match(r"v?1\.(\d+)", version or "")
    return int(match.group(1)) if match else None


def resolve(given: dict[str, object], node=None, observed: dict[str, object] | None = None,
            observed_source: str = "cgroup tree") -> tuple[NodeOptions, dict[str, str]]:
    """Flags win, then what the node's cgroup tree shows (agent only), then the Node object, then
    defaults; returns the options and each one's source."""
    detected = from_node(node)
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for name, field in NodeOptions.model_fields.items():
        key = field.alias or name  # camelCase, like every key of the JSON documents
        if given.get(name) is not None:
            values[name], sources[key] = given[name], "flag"
        elif observed and observed.get(name) is not None:
            values[name], sources[key] = observed[name], observed_source
        elif name in detected:
            values[name], sources[key] = detected[name], f"node {node.name}"
        else:
            sources[key] = "default"
    return NodeOptions(**values), sources
