"""Where a pod's and its containers' cgroups live, per cgroup driver and runtime (docs/kubernetes/kubelet-cgroups.md §4).

Paths are relative to the cgroup v2 mount (``/sys/fs/cgroup``).
"""

from __future__ import annotations

import functools

RUNTIME_PREFIX = {"containerd": "cri-containerd", "crio": "crio"}


@functools.lru_cache(maxsize=32)
def _pod_prefix(qos: str, driver: str, kubelet_root: str) -> str:
    """Everything of a pod's path before its UID: the same for every pod of a QoS class on a node."""
    parts = [p for p in kubelet_root.strip("/").split("/") if p]
    parts.append("kubepods")
    if qos in ("Burstable", "BestEffort"):
        parts.append(qos.lower())
    if driver != "systemd":
        return "/".join([*parts, "pod"])
    # CgroupName.ToSystemd + ExpandSlice: a-b-c.slice under a.slice/a-b.slice/...
    escaped = [p.replace("-", "_") for p in parts]
    parents = "".join("-".join(escaped[: i + 1]) + ".slice/" for i in range(len(escaped)))
    return parents + "-".join(escaped) + "-pod"


def pod_cgroup(qos: str, uid: str, driver: str = "systemd", kubelet_root: str = "/") -> str:
    prefix = _pod_prefix(qos, driver, kubelet_root)
    if driver != "systemd":
        return prefix + uid
    return prefix + uid.replace("-", "_") + ".slice"


def qos_cgroup(qos: str, driver: str = "systemd", kubelet_root: str = "/") -> str:
    """The parent a pod sits under: kubepods itself for Guaranteed pods."""
    return pod_cgroup(qos, "", driver, kubelet_root).rsplit("/", 1)[0]


def container_cgroup(pod_path: str, container_id: str, driver: str = "systemd", runtime: str = "containerd") -> str:
    if driver == "systemd":
        return f"{pod_path}/{RUNTIME_PREFIX[runtime]}-{container_id}.scope"
    return f"{pod_path}/{'crio-' if runtime == 'crio' else ''}{container_id}"
