"""Optional check: a network device allocated to a pod sits in the pod's network namespace.

dranet moves the host interface (``dra.net/ifName`` on the device) into the pod's namespace when
the sandbox starts, possibly renamed (``networkData.interfaceName`` in the claim status). A
device still in the host namespace, or absent from the pod's, is reported. Entering another
process's namespace needs hostPID and CAP_SYS_ADMIN, so this runs only with --check-network
(the DaemonSet's opt-in privileged overlay).
"""

from __future__ import annotations

import os

from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import ResourceSlice
from kubectl_dra.pools.slices import slice_device
from kubectl_dra.verify.report import Divergence, NodeEnforcementReport

IFNAME_ATTRIBUTE = "dra.net/ifName"


def interfaces(netns: str | None = None) -> set[str]:
    """Interface names in a network namespace (a path such as /proc/PID/ns/net), or the current one."""
    # start-up: check-network
    from pyroute2 import IPRoute, NetNS

    handle = NetNS(netns) if netns else IPRoute()
    try:
        return {link.get_attr("IFLA_IFNAME") for link in handle.get_links()}
    finally:
        handle.close()


def expected_devices(pod: Pod, inventory: Inventory) -> list[tuple[str, str | None, str | None]]:
    """(device id, name inside the pod, host name) for the pod's network devices."""
    found = []
    for claim_name in {n for n in pod.referenced_claim_names().values() if n}:
        claim = inventory.get(ResourceClaim, pod.namespace, claim_name)
        if claim is None:
            continue
        for status in claim.status.devices:
            if status.network_data is None:
                continue
            _, device = slice_device(inventory, status.driver, status.pool, status.device)
            host = device.attributes.get(IFNAME_ATTRIBUTE).value if device and IFNAME_ATTRIBUTE in device.attributes \
                else None
            found.append((f"{status.driver}/{status.pool}/{status.device}", status.network_data.interface_name, host))
    return found


def pod_netns(pod_cgroup: str, fs, proc_root: str) -> str | None:
    """A process of the pod (any container) -> its network namespace file."""
    for pid in fs.procs(pod_cgroup) or _child_procs(fs, pod_cgroup):
        path = os.path.join(proc_root, str(pid), "ns", "net")
        if os.path.exists(path):
            return path
    return None


def _child_procs(fs, pod_cgroup: str) -> list[int]:
    try:
        children = fs.children(pod_cgroup)
    except OSError:
        return []
    for child in children:
        pids = fs.procs(child)
        if pids:
            return pids
    return []


def check_network(report: NodeEnforcementReport, inventory: Inventory, source, fs, proc_root: str = "/proc",
                  host_interfaces: set[str] | None = None) -> None:
    """Add a divergence per misplaced network device to the pods of ``report``."""
    # every slice: a device can reach this node by nodeName, nodeSelector, allNodes or per-device selection
    extra = source.read([ReadRequest(ResourceClaim), ReadRequest(ResourceSlice)])
    inventory.extend(extra.all(ResourceClaim))
    inventory.extend(extra.all(ResourceSlice))
    # the host's namespace is PID 1's: the agent's own is its pod's (the overlay shares the host's PIDs,
    # not its network), so reading its own links would never see a device left on the host. Entered
    # only when a pod has a network device to look for: a node without any needs no namespace read
    host = host_interfaces
    pods = {p.uid: p for p in inventory.all(Pod)}
    for verdict in report.status.pods:
        pod = pods.get(verdict.uid)
        if pod is None or verdict.cgroup is None:
            continue
        devices = expected_devices(pod, inventory)
        if not devices:
            continue
        if host is None:
            host = interfaces(os.path.join(proc_root, "1", "ns", "net"))
        netns = pod_netns(verdict.cgroup, fs, proc_root)
        inside = interfaces(netns) if netns else None
        for device, in_pod, host_name in devices:
            file = f"netns:{in_pod or host_name}"
            if host_name and host_name in host:
                verdict.divergences.append(Divergence(
                    scope="pod", file=file, expected="in pod", observed="in host namespace", cause="NetworkDeviceInHost",
                    severity="error", message=f"{device}: host interface {host_name} was not moved into the pod"))
            elif inside is not None and in_pod and in_pod not in inside:
                verdict.divergences.append(Divergence(
                    scope="pod", file=file, expected="in pod", observed="absent", cause="NetworkDeviceMissing",
                    severity="error", message=f"{device}: {in_pod} is not in the pod's network namespace"))
        if any(d.cause.startswith("NetworkDevice") for d in verdict.divergences):
            verdict.verdict = "Diverged"
