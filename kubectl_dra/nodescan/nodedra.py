"""Reading the node's DRA state, read-only: the kubelet's checkpoint, the CDI spec directories and
the kubelet's PodResources API. Each source is optional (the DaemonSet mounts each only with its
opt-in component); what is absent, unreadable or corrupt is said in ``sources`` and nothing is
concluded from it.

The PodResources API is gRPC; its client is the agent's (``node_agent.podresources``) and is handed
in as ``list_pod_resources``, so this package needs no gRPC. Without a client (``kubectl dra verify``)
that source is not looked at: no ``podResources`` entry, and nothing concluded from it.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Callable

from kubectl_dra.nodestate.cdi import build_index
from kubectl_dra.nodestate.checkpoint import CheckpointError, parse_dra_checkpoint
from kubectl_dra.nodestate.reconcile import NodeDRAState
from kubectl_dra.text import plural
from kubectl_dra.nodestate.podresources import PodResourcesView
from kubectl_dra.verify.report import NodeSource
from kubectl_dra.nodescan.kubeletstate import read_host_file, unreadable

DRA_CHECKPOINT = "dra_manager_state"
DEFAULT_CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
POD_RESOURCES_SOCKET = "pod-resources/kubelet.sock"  # under the kubelet's root directory
CHECKPOINT_HINT = "the kubelet writes it 0600 root: deploy manifests/node-dra-state"
POD_RESOURCES_TIMEOUT = 5.0  # seconds for the kubelet to answer List
REREAD_AFTER = 0.2  # seconds: a checkpoint that fails to parse is read once more before it is called corrupt


def read_checkpoint(kubelet_root: str | None, state: NodeDRAState) -> None:
    path = os.path.join(kubelet_root or "", DRA_CHECKPOINT)
    state.checkpoint_path = path
    if not kubelet_root:
        state.sources.append(NodeSource(name="draCheckpoint", path=path, state="absent", message="no --kubelet-root"))
        return
    blob, problem = read_host_file(path, CHECKPOINT_HINT)
    if problem:
        state.sources.append(NodeSource(name="draCheckpoint", path=path, state="unreadable", message=problem))
        return
    if blob is None:
        state.sources.append(NodeSource(name="draCheckpoint", path=path, state="absent",
                                        message="not there (not mounted, or the kubelet never prepared a claim)"))
        return
    try:
        state.checkpoint = parse_dra_checkpoint(blob)
    except CheckpointError:
        time.sleep(REREAD_AFTER)  # the kubelet replaces the file atomically, but never trust one glance
        again = read_host_file(path, CHECKPOINT_HINT)[0] or blob
        try:
            state.checkpoint = parse_dra_checkpoint(again)
        except CheckpointError as exc:
            state.checkpoint_corrupt = str(exc)
            state.sources.append(NodeSource(name="draCheckpoint", path=path, state="corrupt", message=str(exc)))
            return
    state.sources.append(NodeSource(name="draCheckpoint", path=path, state="read",
                                    message=plural(len(state.checkpoint.claims), "prepared claim")))


def read_cdi(dirs: tuple[str, ...], state: NodeDRAState) -> None:
    """The runtime's scan: *.json and *.yaml directly in each directory, in name order."""
    joined = ", ".join(dirs)
    present, files, problems = [], [], []
    for priority, directory in enumerate(dirs):
        try:
            names = sorted(os.listdir(directory))
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{directory}: {unreadable(exc, 'mount it read-only with manifests/node-dra-state')}")
            continue
        present.append(directory)
        for name in names:
            if not name.endswith((".json", ".yaml")):
                continue
            path = os.path.join(directory, name)
            try:
                if stat.S_ISDIR(os.stat(path).st_mode):
                    continue
            except OSError as exc:
                problems.append(f"{path}: {unreadable(exc, 'unreadable spec')}")
                continue
            data, problem = read_host_file(path, "unreadable spec")
            if problem or data is None:  # (gone between the listing and the read: not read either)
                problems.append(f"{path}: {problem or 'No such file or directory'}")
            else:
                files.append((priority, path, data.decode("utf-8", "replace")))
    if problems:  # what could not be read may define an ID: then no ID is called missing
        state.sources.append(NodeSource(name="cdi", path=joined, state="unreadable",
                                        message="; ".join(problems) + "; CDI IDs are not checked"))
        return
    if not present:
        state.sources.append(NodeSource(name="cdi", path=joined or "(none)", state="absent",
                                        message="no CDI spec directory there (not mounted)" if dirs else
                                        "no CDI spec directory given"))
        return
    state.cdi = build_index(tuple(dirs), files)
    skipped = len(state.cdi.errors)
    message = f"{plural(len(files), 'spec file')}, {plural(len(state.cdi.devices), 'device ID')}"
    if skipped:
        message += f"; {plural(skipped, 'file')} the runtime skips: " + "; ".join(
            f"{p}: {why}" for p, why in list(state.cdi.errors.items())[:3])
    state.sources.append(NodeSource(name="cdi", path=joined, state="read", message=message))


class PodResourcesUnavailable(Exception):
    """The kubelet's PodResources API did not answer ``List``: why, in words (raised by the client)."""


PodResourcesClient = Callable[[str, float], PodResourcesView]  # (socket path, timeout) -> the kubelet's answer


def read_pod_resources(socket_path: str | None, state: NodeDRAState, client: PodResourcesClient,
                       timeout: float | None = None) -> None:
    if not socket_path:
        return
    try:
        mode = os.stat(socket_path).st_mode
    except FileNotFoundError:
        state.sources.append(NodeSource(name="podResources", path=socket_path, state="absent",
                                        message="no socket there (not mounted)"))
        return
    except OSError as exc:
        state.sources.append(NodeSource(name="podResources", path=socket_path, state="unreadable",
                                        message=unreadable(exc, "deploy manifests/node-dra-state")))
        return
    if not stat.S_ISSOCK(mode):
        state.sources.append(NodeSource(name="podResources", path=socket_path, state="unreadable",
                                        message="not a unix socket"))
        return
    try:
        state.pod_resources = client(socket_path, timeout or POD_RESOURCES_TIMEOUT)
    except PodResourcesUnavailable as exc:
        state.sources.append(NodeSource(name="podResources", path=socket_path, state="unreadable", message=str(exc)))
        return
    view = state.pod_resources
    state.sources.append(NodeSource(name="podResources", path=socket_path, state="read",
                                    message=f"{plural(len(view.pods), 'pod')}, {plural(len(view.rows), 'DRA device')}"))


def read_node_dra(kubelet_root: str | None, cdi_dirs: tuple[str, ...] | None = None,
                  pod_resources_socket: str | None = None,
                  list_pod_resources: PodResourcesClient | None = None) -> NodeDRAState:
    """``pod_resources_socket`` defaults to ``<kubelet-root>/pod-resources/kubelet.sock``; it is read
    only with a ``list_pod_resources`` client."""
    state = NodeDRAState()
    dirs = tuple(cdi_dirs if cdi_dirs is not None else DEFAULT_CDI_DIRS)
    _guarded(state, "draCheckpoint", os.path.join(kubelet_root or "", DRA_CHECKPOINT),
             ("checkpoint", "checkpoint_corrupt"), lambda: read_checkpoint(kubelet_root, state))
    _guarded(state, "cdi", ", ".join(dirs) or "(none)", ("cdi",), lambda: read_cdi(dirs, state))
    if list_pod_resources is not None:
        socket_path = pod_resources_socket or (os.path.join(kubelet_root, POD_RESOURCES_SOCKET) if kubelet_root
                                               else None)
        _guarded(state, "podResources", socket_path or "", ("pod_resources",),
                 lambda: read_pod_resources(socket_path, state, list_pod_resources))
    return state


def _guarded(state: NodeDRAState, name: str, path: str, fields: tuple[str, ...], read: Callable[[], None]) -> None:
    """One source's reader; an error it did not foresee (a bug) makes that source unreadable, named,
    and nothing is concluded from it, while the other sources and the cgroup checks go on: one odd
    file a driver wrote must not blind the agent to the whole node."""
    before = len(state.sources)
    try:
        read()
    except Exception as exc:  # noqa: BLE001 - the scan must survive its own readers
        del state.sources[before:]
        for attribute in fields:
            setattr(state, attribute, None)
        state.sources.append(NodeSource(name=name, path=path, state="unreadable", message=(
            f"unexpected {type(exc).__name__}: {exc} (a bug in kubectl-dra; nothing is concluded from this source)")))
