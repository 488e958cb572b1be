"""Build a node's cgroup v2 tree on disk from the prediction itself, then perturb it.

A tree written from the prediction must scan as all-Match; each perturbation plants one
divergence a scan must find and classify. Files are written as the kernel would show them.
"""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.paths import container_cgroup, qos_cgroup
from kubectl_dra.cgroups.predict import predict_pod
from kubectl_dra.model.pod import Pod


def build_tree(root: Path, pods: list[Pod], options: NodeOptions, *, hugepage_kb=(2048, 1048576),
               exclusive: dict[str, dict[str, str]] | None = None, cpusets: bool = False) -> dict:
    """Write ``root/fs/cgroup`` (cgroup v2) and ``root/kernel/mm/hugepages``; returns
    {(pod name, container or None): directory} for perturbations.

    Container hugetlb files read ``max`` unless ``options.applies_container_hugetlb`` (containerd
    leaves them unset by default); ``exclusive`` is the kubelet's assignment (pod UID -> container ->
    cpuset); ``cpusets`` also writes each container's ``cpuset.cpus`` as the kubelet sets it."""
    cgroup = root / "fs" / "cgroup"
    cgroup.mkdir(parents=True, exist_ok=True)
    (cgroup / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    for kb in hugepage_kb:
        (root / "kernel" / "mm" / "hugepages" / f"hugepages-{kb}kB").mkdir(parents=True, exist_ok=True)
    for qos in ("Guaranteed", "Burstable", "BestEffort"):
        (cgroup / qos_cgroup(qos, options.cgroup_driver, options.kubelet_cgroup_root)).mkdir(parents=True,
                                                                                               exist_ok=True)
    dirs = {}
    for pod in pods:
        entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
        prediction = predict_pod(pod, entries, options, (exclusive or {}).get(pod.uid) if exclusive is not None
                                 else None)
        pod_dir = cgroup / prediction.pod.path
        _write(pod_dir, prediction.pod.files)
        dirs[(pod.name, None)] = pod_dir
        for container in prediction.containers:
            status = pod.container_status(container.name)
            pair = status.runtime_and_id if status else None
            if pair is None:
                continue
            runtime = "crio" if pair[0] == "cri-o" else "containerd"
            path = cgroup / container_cgroup(prediction.pod.path, pair[1], options.cgroup_driver, runtime)
            files = dict(container.files)
            if not options.applies_container_hugetlb:
                files.update({name: "max" for name in files if name.startswith("hugetlb.")})
            if cpusets:
                files["cpuset.cpus"] = prediction.exclusive_cpus.get(container.name, "")
            _write(path, files)  # no cgroup.procs: these trees say nothing of which processes run
            dirs[(pod.name, container.name)] = path
    return dirs


def _write(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (directory / name).write_text(value + "\n")


def set_file(directory: Path, name: str, value: str) -> None:
    (directory / name).write_text(value + "\n")
