"""NodePorts, as kube-scheduler v1.37.2 runs it: a host port the pod asks for conflicts with one
already used on the node (``HostPortInfo.CheckConflict``).

Host IPs are compared as strings: only "0.0.0.0" (or an empty hostIP) is the wildcard, which
conflicts with the same protocol and port on every IP; "::" is an address like any other. An
empty protocol is TCP. Ports come from containers and sidecar (``restartPolicy: Always``) init
containers only. A failure is Unschedulable (preemption may free the port).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from kubectl_dra.scheduling.checks import rejected, resize_deferred, resize_pre_filter, undetermined, unreadable
from kubectl_dra.scheduling.framework import SKIP, Cycle, NodeInfo, Plugin, PodInfo, PreFilterResult, Status

NAME = "NodePorts"
# pkg/scheduler/framework/plugins/nodeports/node_ports.go (ErrReason)
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
# k8s.io/kube-scheduler/framework/types.go (DefaultBindAllHostIP)
BIND_ALL = "0.0.0.0"
_PORT_FIELDS = re.compile(r"spec(\.(initC|c)ontainers(\[\d+\](\.(ports|restartPolicy|name)([.\[].*)?)?)?)?")

Port = tuple[str, str, int]  # (hostIP, protocol, hostPort)


def sanitize(ip: str, protocol: str, port: int) -> Port:
    """``HostPortInfo.sanitize``: an empty IP is 0.0.0.0, an empty protocol TCP."""
    return (ip or BIND_ALL, protocol or "TCP", port)


def host_ports(pod: Any) -> list[Port]:
    """``util.GetHostPorts``: sidecar init containers first, then containers; host port > 0 only."""
    ports = [sanitize(p.host_ip, p.protocol, p.host_port) for c in pod.spec.init_containers
             if c.restart_policy == "Always" for p in c.ports if p.host_port > 0]
    ports += [sanitize(p.host_ip, p.protocol, p.host_port) for c in pod.spec.containers
              for p in c.ports if p.host_port > 0]
    return ports


def conflicts(used: Iterable[Port], ip: str, protocol: str, port: int) -> bool:
    """``HostPortInfo.CheckConflict``: 0.0.0.0 conflicts with the protocol and port on any IP;
    another IP with itself and 0.0.0.0. Port <= 0 never conflicts (nor is it ever used)."""
    if port <= 0:
        return False
    ip, protocol, port = sanitize(ip, protocol, port)
    for used_ip, used_protocol, used_port in used:
        if used_port <= 0:
            continue
        used_ip, used_protocol, _ = sanitize(used_ip, used_protocol, used_port)
        if used_port == port and used_protocol == protocol and (ip == BIND_ALL or used_ip in (BIND_ALL, ip)):
            return True
    return False


def port_fields_unreadable(pod: Any) -> list[str]:
    """Dropped fields that could hide a host port: a container's ports, restartPolicy or the
    container itself (a container dropped whole leaves only its path); not its resources."""
    return [p for p in unreadable(pod, "spec.containers", "spec.initContainers") if _PORT_FIELDS.fullmatch(p)]


class NodePorts(Plugin):
    NAME = NAME

    def __init__(self, *, resize_preemption: bool = False) -> None:
        self.resize_preemption = resize_preemption  # InPlacePodVerticalScalingSchedulerPreemption

    def pre_filter(self, cycle: Cycle) -> PreFilterResult:
        pod = cycle.pod.pod
        if self.resize_preemption and (early := resize_pre_filter(NAME, pod)) is not None:
            return PreFilterResult(status=early)
        bad = port_fields_unreadable(pod)
        if bad:
            return PreFilterResult(status=undetermined(NAME, "the pod's", bad))
        wanted = host_ports(pod)
        if not wanted:
            return PreFilterResult(status=self._status(Status(SKIP)))
        return PreFilterResult(state=wanted)

    def filter(self, cycle: Cycle, state: Any, node: NodeInfo) -> Status:
        if self.resize_preemption and resize_deferred(cycle.pod.pod):
            return Status()
        if state is None:  # upstream: "reading PreFilterNodePorts from cycleState: not found"
            return self._status(Status.error(f'reading "PreFilter{NAME}" from cycleState: not found'))
        for ip, protocol, port in state:
            if conflicts(node.used_ports, ip, protocol, port):
                return rejected(NAME, ERR_REASON, self._who(node, ip, protocol, port), unresolvable=False)
        hidden = [f"{p.pod.key}: {', '.join(bad)}" for p in node.pods
                  if p.pod.invalid_fields and (bad := port_fields_unreadable(p.pod))]
        if hidden:  # a port used there may be missing from used_ports
            return self._status(Status.unknown(f"{NAME}: the ports of pods on node {node.name} could not be read "
                                               f"({'; '.join(hidden)})"))
        return Status()

    @staticmethod
    def _who(node: NodeInfo, ip: str, protocol: str, port: int) -> str:
        """``TCP 8080`` (on its IP unless 0.0.0.0) and the pod on the node that uses it."""
        where = f"{protocol} {port}" + ("" if ip == BIND_ALL else f" on {ip}")
        users: list[PodInfo] = [p for p in node.pods if conflicts(p.host_ports, ip, protocol, port)]
        return f"{where} used by pod {users[0].pod.key}" if users else f"{where} already used on the node"

    @staticmethod
    def _status(status: Status) -> Status:
        status.plugin = NAME
        return status
