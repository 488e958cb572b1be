"""``kubectl dra verify`` once its flags are parsed: the agents' reports (or a scan of this node)
re-checked against the pods now, one NodeEnforcementReportList, its printer, the exit status."""

from __future__ import annotations

from kubectl_dra.commands.inputs import open_for, read_versions, report_problems
from kubectl_dra.env import Environment
from kubectl_dra.errors import DRAError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.sources import Opened
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.nodescan.node import HostPaths, NodeScan, choose_node
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.reports import unverified_pods
from kubectl_dra.printers.verify import print_verify
from kubectl_dra.text import plural
from kubectl_dra.verify.report import NodeEnforcementReport
from kubectl_dra.verify.result import (ambiguous_pod, exit_status, no_reports, pod_error, report_requests,
                                       reports_to_show, scope, unknown_node, unverified_count, verify_result)
from kubectl_dra.versions import kubelet_notes


def run(env: Environment, *, kube: KubeOptions, node_flags: dict, nodes: tuple[str, ...], selector: str | None,
        cgroup_root: str | None, kubelet_root: str, cdi_dirs, output: OutputOptions, pod: str | None) -> ExitStatus:
    env.color = output.color
    opened = open_for(env, kube)
    namespace = scope(kube.all_namespaces, kube.namespace, opened.default_namespace, pod)
    if cgroup_root:
        host = HostPaths(cgroup_root=cgroup_root, kubelet_root=kubelet_root, cdi_dirs=cdi_dirs)
        reports, inventory = _scan_here(env, opened, nodes[0] if nodes else None, host, node_flags)
        missing: dict[str, int] = {}
    else:
        reports, inventory, missing = _from_reports(env, opened, nodes, selector, namespace, pod, kube)
    _stop_on(env, inventory, pod_error(inventory, pod, namespace, nodes, all_namespaces=kube.all_namespaces,
                                       here=bool(cgroup_root)))
    result = verify_result(reports, inventory, namespace, pod, list(missing))
    result.versions = kubelet_notes(read_versions(opened, inventory.of_kind("Node")))
    print_verify(env, result, output, missing)
    if output.format not in ("json", "yaml"):
        for report in reports:
            if report.status.message:  # why the node could not be checked: a reason, for stderr
                env.error(f"warning: {report.metadata.name}: {report.status.message}")
    status = exit_status(reports, missing, report_problems(env, inventory))
    unchecked = unverified_count(reports, missing)
    if status is not ExitStatus.DIVERGED and unchecked:
        which = unverified_pods(reports)
        env.error(f"warning: {plural(unchecked, 'pod')} {'was' if unchecked == 1 else 'were'} not verified (unknown, stale, "
                  "or on a node without a report): the result is partial" + (f": {which}" if which else ""))
    return status


def _scan_here(env: Environment, opened: Opened, node: str | None, host: HostPaths,
               node_flags: dict) -> tuple[list[NodeEnforcementReport], Inventory]:
    """The node scan of ``dra-node-agent scan --once``, on this node: its report, and what was read."""
    name, name_source = choose_node(node, env.environ)
    result = NodeScan(opened.source, name, node_flags, host, name_source=name_source).run()
    for severity, problem in result.problems:
        env.error(f"{severity}: {problem}")
    return [result.report], result.inventory


def _from_reports(env: Environment, opened: Opened, nodes: tuple[str, ...], selector: str | None,
                  namespace: str | None, pod: str | None, kube: KubeOptions):
    """The agents' reports, re-checked against the pods now, and the nodes asked about that have none."""
    inventory = opened.source.read(report_requests(nodes, selector, namespace))
    _stop_on(env, inventory, ambiguous_pod(inventory, pod, namespace, kube.all_namespaces))
    _stop_on(env, inventory, unknown_node(inventory, nodes))
    reports, missing = reports_to_show(inventory, nodes, selected=bool(selector), namespace=namespace, pod=pod)
    if not reports:
        _stop_on(env, inventory, no_reports(inventory, nodes))
    return reports, inventory, missing


def _stop_on(env: Environment, inventory: Inventory, error: DRAError | None) -> None:
    """An error decided by the core stops the command (exit 3) after what could not be read is said."""
    if error is not None:
        report_problems(env, inventory)
        raise error
