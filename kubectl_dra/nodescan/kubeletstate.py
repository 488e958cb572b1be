"""The kubelet's own state files under its root directory (``--kubelet-root``, default
``/var/lib/kubelet``; in the DaemonSet the directory, mounted read-only under ``/host``: the kubelet
replaces its checkpoints by renaming a new file over the old, so a mount of one file goes stale at
the first change, which is refused here, never read as current).

Every file is optional: a missing one means "not mounted" (the agent then predicts from the pod
specs and says so); an unreadable or malformed one is reported, never guessed around. The kubelet
writes its checkpoints 0600 root, so reading them needs the opt-in ``manifests/kubelet-state``
overlay.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from kubectl_dra.cgroups.cpumanager import CPUManagerState, CPUManagerStateError, parse_cpu_manager_state
from kubectl_dra.nodescan.cgroupfs import ReplacedFile, read_small

DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"
CPU_MANAGER_STATE = "cpu_manager_state"
MAX_STATE_BYTES = 16 << 20


@dataclass
class KubeletState:
    root: str | None
    cpu_manager: CPUManagerState | None = None
    problems: list[str] | None = None  # what could not be read, one line each

    @property
    def cpu_manager_source(self) -> str:
        return f"{os.path.join(self.root or '', CPU_MANAGER_STATE)} ({self.cpu_manager.form} form)" \
            if self.cpu_manager else ""


def unreadable(exc: OSError, hint: str) -> str:
    """Why a host path could not be read, with what a permission error means (``hint``: which
    overlay gives a root agent the mount)."""
    if isinstance(exc, ReplacedFile):  # a stale single-file mount: say what to mount instead
        return f"{exc.strerror} (manifests/components/kubelet-state mounts the kubelet's root directory)"
    return f"permission denied ({hint})" if exc.errno in (errno.EACCES, errno.EPERM) else (exc.strerror or str(exc))


def read_host_file(path: str, hint: str, limit: int = MAX_STATE_BYTES) -> tuple[bytes | None, str | None]:
    """(content, why it could not be read); (None, None) when the file is simply not there. ``hint``
    says what a permission error means (which overlay mounts the file for a root agent)."""
    try:  # non-blocking and regular files only: a FIFO or a device where a state file belongs never hangs a scan
        data = read_small(path, limit=limit)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, unreadable(exc, hint)
    return data, None


def read_kubelet_state(root: str | None) -> KubeletState:
    state = KubeletState(root=root, problems=[])
    if not root:
        return state
    path = os.path.join(root, CPU_MANAGER_STATE)
    data, problem = read_host_file(path, "the kubelet writes it 0600 root: deploy manifests/kubelet-state")
    if problem:
        state.problems.append(f"cannot read {path}: {problem}")
    elif data is not None:
        try:
            state.cpu_manager = parse_cpu_manager_state(data.decode("utf-8", "replace"))
        except CPUManagerStateError as exc:
            state.problems.append(f"{path}: not a CPU manager checkpoint this tool can read ({exc}); the CPU manager "
                                  "policy and exclusive CPUs are not taken from it")
        except Exception as exc:  # noqa: BLE001 - a reader's bug costs this file, never the scan
            state.problems.append(f"{path}: unexpected {type(exc).__name__}: {exc} (a bug in kubectl-dra); the CPU "
                                  "manager policy and exclusive CPUs are not taken from it")
    return state
