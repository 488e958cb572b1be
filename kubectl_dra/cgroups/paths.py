"""Where a pod's and its containers' cgroups live, per cgroup driver and runtime (§4).

Paths are relative to the cgroup v2 mount (``/sys/fs/cgroup``).
"""

from __future__ import annotations

RUNTIME_PREFIX = {"containerd": "cri-containerd", "crio": "crio"}


def _parts(qos: str, uid: str, kubelet_root: str) -> list[str]:
    parts = [p for p in kubelet_root.strip("/").split("/") if p]
    parts.append("kubepods")
    if qos in ("Burstable", "BestEffort"):
        parts.append(qos.lower())
    parts.append(f"pod{uid}")
    return parts


def _systemd(parts: list[str]) -> str:
    """CgroupName.ToSystemd + ExpandSlice: a-b-c.slice under a.slice/a-b.slice/..."""
    escaped = [p.replace("-", "_") for p in parts]
    return "/".join("-".join(escaped[: i + 1]) + ".slice" for i in range(len(escaped)))


def pod_cgroup(qos: str, uid: str, driver: str = "systemd", kubelet_root: str = "/") -> str:
    parts = _parts(qos, uid, kubelet_root)
    return _systemd(parts) if driver == "systemd" else "/".join(parts)


def qos_cgroup(qos: str, driver: str = "systemd", kubelet_root: str = "/") -> str:
    """The parent a pod sits under: kubepods itself for Guaranteed pods."""
    return pod_cgroup(qos, "", driver, kubelet_root).rsplit("/", 1)[0]


def container_cgroup(pod_path: str, container_id: str, driver: str = "systemd", runtime: str = "containerd") -> str:
    if driver == "systemd":
        return f"{pod_path}/{RUNTIME_PREFIX[runtime]}-{container_id}.scope"
    return f"{pod_path}/{'crio-' if runtime == 'crio' else ''}{container_id}"
