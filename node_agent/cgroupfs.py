"""Reading a node's cgroup v2 tree: version, driver, huge page sizes, and the files of one cgroup.

The root is injectable (``/sys/fs/cgroup`` on a node, ``/host/sys/fs/cgroup`` in the DaemonSet,
a directory tree in tests). Paths are computed from the pod UID, QoS and container IDs, never
found by walking the tree, so a scan reads only the files it compares.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kubectl_dra.cgroups.paths import qos_cgroup
from kubectl_dra.verify.compare import ObservedCgroup

DEFAULT_ROOT = "/sys/fs/cgroup"


class CgroupFS:
    def __init__(self, root: str | os.PathLike = DEFAULT_ROOT, sys_root: str | os.PathLike | None = None):
        self.root = Path(root)
        # /sys/fs/cgroup -> /sys ; /host/sys/fs/cgroup -> /host/sys (where kernel/mm/hugepages lives)
        if sys_root is None:
            text = str(self.root)
            sys_root = text[: -len("/fs/cgroup")] if text.endswith("/fs/cgroup") else None
        self.sys_root = Path(sys_root) if sys_root else None

    def version(self) -> str:
        """v2 (unified), hybrid (v1 controllers plus a unified mount), v1, or missing."""
        if (self.root / "cgroup.controllers").exists():
            return "v2"
        if (self.root / "unified" / "cgroup.controllers").exists():
            return "hybrid"
        if any((self.root / c).is_dir() for c in ("memory", "cpu", "cpu,cpuacct")):
            return "v1"
        return "missing" if not self.root.exists() else "unknown"

    def driver(self, kubelet_root: str = "/") -> str | None:
        """systemd when kubepods is a slice, cgroupfs when it is a plain directory (None: no kubepods)."""
        for driver in ("systemd", "cgroupfs"):
            if (self.root / qos_cgroup("Guaranteed", driver, kubelet_root)).is_dir():
                return driver
        return None

    def hugepage_sizes(self) -> list[int] | None:
        """Host huge page sizes in bytes from ``kernel/mm/hugepages/hugepages-<N>kB`` (None: unknown)."""
        if self.sys_root is None:
            return None
        directory = self.sys_root / "kernel" / "mm" / "hugepages"
        try:
            names = os.listdir(directory)
        except OSError:
            return None
        sizes = []
        for name in names:
            if name.startswith("hugepages-") and name.endswith("kB") and name[10:-2].isdigit():
                sizes.append(int(name[10:-2]) * 1024)
        return sorted(sizes)

    def read(self, relative: str, files: list[str]) -> ObservedCgroup:
        """The named files of one cgroup; a missing file reads as None, a missing directory as error."""
        directory = self.root / relative
        observed = ObservedCgroup(path=relative)
        for name in files:
            try:
                with open(directory / name, encoding="ascii", errors="replace") as handle:
                    observed.files[name] = handle.read().strip()
            except FileNotFoundError:
                if not directory.is_dir():
                    observed.error = f"cgroup {relative} does not exist"
                    observed.files.clear()
                    return observed
                observed.files[name] = None
            except OSError as exc:
                reason = "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else exc.strerror
                observed.error = f"cannot read {relative}/{name}: {reason}"
                return observed
        return observed

    def procs(self, relative: str) -> list[int]:
        """PIDs in a cgroup (``cgroup.procs``), for naming the processes behind a divergence."""
        try:
            text = (self.root / relative / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(line) for line in text.split() if line.isdigit()]
