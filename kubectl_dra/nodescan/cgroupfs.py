"""Reading a node's cgroup v2 tree: version, driver, huge page sizes, and the files of one cgroup.

The root is injectable (``/sys/fs/cgroup`` on a node, ``/host/sys/fs/cgroup`` in the DaemonSet,
a directory tree in tests). Paths are computed from the pod UID, QoS and container IDs, never
found by walking the tree, so a scan reads only the files it compares.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import psutil

from kubectl_dra.cgroups.paths import qos_cgroup
from kubectl_dra.verify.compare import ObservedCgroup

DEFAULT_ROOT = "/sys/fs/cgroup"


class CgroupFS:
    def __init__(self, root: str | os.PathLike = DEFAULT_ROOT, sys_root: str | os.PathLike | None = None):
        self.root = Path(root)
        self.root_text = str(self.root)
        # /sys/fs/cgroup -> /sys ; /host/sys/fs/cgroup -> /host/sys (where kernel/mm/hugepages lives)
        if sys_root is None:
            text = str(self.root)
            sys_root = text[: -len("/fs/cgroup")] if text.endswith("/fs/cgroup") else None
        self.sys_root = Path(sys_root) if sys_root else None

    def version(self) -> str:
        """v2 (unified), hybrid (v1 controllers plus a unified mount), v1, missing, or unreadable
        (the root cannot be entered: said, never taken for "missing")."""
        try:
            if self._exists(self.root / "cgroup.controllers"):
                return "v2"
            if self._exists(self.root / "unified" / "cgroup.controllers"):
                return "hybrid"
            if any(self._isdir(self.root / c) for c in ("memory", "cpu", "cpu,cpuacct")):
                return "v1"
            return "unknown" if self._exists(self.root) else "missing"
        except PermissionError:
            return "unreadable"

    def _stat(self, path: Path) -> os.stat_result:
        return os.stat(path)

    def _exists(self, path: Path) -> bool:
        try:
            self._stat(path)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False

    def _isdir(self, path: Path) -> bool:
        try:
            return stat.S_ISDIR(self._stat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def unusable(self) -> tuple[str, str] | None:
        """Why this root cannot be scanned, as (cause, message); None for a cgroup v2 mount. A
        missing or wrong path is CgroupMissing (the flag or the mount is wrong), cgroup v1 is
        CgroupUnsupported (the node is): ``scan --once``, ``verify --cgroup-root`` and the
        service's report say the same words."""
        version = self.version()
        if version == "v2":
            return None
        return {"hybrid": ("CgroupUnsupported", f"{self.root}: this node runs cgroup v1 controllers (hybrid mode); "
                           "only cgroup v2 is supported"),
                "v1": ("CgroupUnsupported", f"{self.root}: this node runs cgroup v1; only cgroup v2 is supported"),
                "missing": ("CgroupMissing", f"{self.root} does not exist (mount the host's /sys/fs/cgroup there)"),
                "unreadable": ("CgroupUnreadable", f"{self.root}: permission denied")}.get(
            version, ("CgroupMissing", f"{self.root} is not a cgroup v2 mount (no cgroup.controllers there)"))

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
            if name.startswith("hugepages-") and name.endswith("kB") and (name[10:-2].isascii() and name[10:-2].isdigit()):
                sizes.append(int(name[10:-2]) * 1024)
        return sorted(sizes)

    def read(self, relative: str, files: list[str]) -> ObservedCgroup:
        """The named files of one cgroup; a missing file reads as None, a missing directory as error.

        One directory descriptor and raw os reads per file: a scan of 1,000 containers reads ~9,000
        small files, and text-mode file objects would cost more than the kernel does.
        """
        observed = ObservedCgroup(path=relative)
        try:
            directory = os.open(os.path.join(self.root_text, relative), os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            observed.error = f"cgroup {relative} does not exist"
            return observed
        except OSError as exc:
            observed.error = f"cannot open cgroup {relative}: {_reason(exc)}"
            observed.error_cause = "CgroupUnreadable"
            return observed
        try:
            values = observed.files
            for name in files:
                try:
                    values[name] = read_small(name, dir_fd=directory, limit=FILE_LIMIT).decode("ascii", "replace").strip()
                except FileNotFoundError:
                    values[name] = None
                except OSError as exc:  # this file only: the others are still compared
                    observed.unreadable[name] = f"cannot read cgroup file {relative}/{name}: {_reason(exc)}"
        finally:
            os.close(directory)
        return observed

    def process_names(self, relative: str, proc_root: str = "/proc", limit: int = 5) -> list[str]:
        """``pid name`` of the first processes in a cgroup (psutil over the host's /proc): who is
        running under a value that diverged."""
        names = []
        previous = psutil.PROCFS_PATH
        psutil.PROCFS_PATH = proc_root
        try:
            for pid in self.procs(relative)[:limit]:
                try:
                    names.append(f"{pid} {psutil.Process(pid).name()}")
                except (psutil.Error, OSError):
                    names.append(f"{pid} <gone>")
        finally:
            psutil.PROCFS_PATH = previous
        return names

    def procs(self, relative: str) -> list[int]:
        """PIDs in a cgroup (``cgroup.procs``), for naming the processes behind a divergence."""
        try:
            text = read_small(str(self.root / relative / "cgroup.procs"), limit=PROCS_LIMIT).decode("ascii", "replace")
        except OSError:
            return []
        return [int(line) for line in text.split() if (line.isascii() and line.isdigit())]


    def children(self, relative: str) -> list[str]:
        """The child cgroups' relative paths (OSError when the cgroup cannot be listed)."""
        relative = relative.strip("/")
        return [f"{relative}/{entry.name}" for entry in os.scandir(self.root / relative) if entry.is_dir()]

    def runs_processes(self, relative: str) -> bool:
        """A process in the cgroup or a child of it (a pod's sandbox, its containers). Only a cgroup
        that does not exist, or whose every ``cgroup.procs`` reads empty, runs none: what cannot be
        read counts as running, so nothing is concluded from it."""
        def holds(path: str) -> bool:
            try:
                return bool(read_small(str(self.root / path / "cgroup.procs"), limit=PROCS_LIMIT).split())
            except OSError:
                return True

        try:
            children = self.children(relative)
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return holds(relative.strip("/")) or any(holds(child) for child in children)


FILE_LIMIT = 4096  # a cgroup value file (cpu.max, memory.max, cpuset.cpus) fits in a page
PROCS_LIMIT = 1 << 20  # cgroup.procs: a PID per line; a MiB holds over 100,000


class NotRegularFile(OSError):
    """A FIFO, device or socket where a kernel file belongs (a test tree, a wrong mount)."""


class ReplacedFile(OSError):
    """A file that has no name left (its link count is 0): what a mount of a single file shows after
    the host replaced the file by renaming a new one over it, as the kubelet writes its checkpoints.
    Its content is the old one, so nothing may be concluded from it."""


def read_small(path: str, *, dir_fd: int | None = None, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file. Opened non-blocking and checked with fstat before
    the read, so a FIFO or a device in the tree is refused at once, never waited on or read without
    end; what is beyond the limit is not read (OSError EFBIG, said as "larger than")."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        status = os.fstat(fd)
        mode = status.st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({_kind(mode)})")
        if status.st_nlink == 0:
            raise ReplacedFile(errno.ESTALE, "replaced on the host since it was mounted: a mount of the file "
                                             "alone keeps showing the old one; mount its directory")
        data = b""
        while len(data) <= limit:  # kernel files (seq_file: cgroup.procs) may answer a page per read
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a directory" if stat.S_ISDIR(mode) else "not a file")


def _reason(exc: OSError) -> str:
    return "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else (exc.strerror or str(exc))
