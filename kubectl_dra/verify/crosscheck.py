"""Trusting an agent's report only as far as the cluster still agrees with it.

A report says what a node enforced at ``observedAt``. If a pod changed since in a way that
changes its prediction (resized, its claims re-recorded, replaced), the verdict is marked stale
rather than believed; pods that arrived after the scan are listed as unreported.
"""

from __future__ import annotations

from pydantic import ValidationError

from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.predict import predict_pod
from kubectl_dra.errors import InputError
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.pod import Pod
from kubectl_dra.verify.report import NodeEnforcementReport


def pods_on(inventory: Inventory, node: str) -> list[Pod]:
    """Pods that have cgroups on the node: bound to it and not finished."""
    return sorted((p for p in inventory.pods_by_node().get(node, ()) if not p.is_done),
                  key=lambda p: (p.namespace or "", p.name))


def parse_report(raw: dict) -> NodeEnforcementReport:
    try:
        return NodeEnforcementReport.model_validate(raw)
    except ValidationError as exc:
        name = (raw.get("metadata") or {}).get("name", "<unnamed>")
        first = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        raise InputError(f"NodeEnforcementReport {name}: {where}: {first['msg']} (the report is not used: its "
                         "node counts as without a report)") from None


def crosscheck(report: NodeEnforcementReport, inventory: Inventory, *, namespace: str | None = None) -> None:
    """Mark stale verdicts and list unreported pods, in place (only pods of ``namespace`` if given)."""
    try:
        options = NodeOptions.model_validate(report.status.node_options) if report.status.node_options else None
    except ValidationError:
        options = None
    from_state = "cpu_manager_state" in report.status.node_options_source.get("cpuManagerPolicy", "")
    now = {p.uid: p for p in pods_on(inventory, report.metadata.name)
           if namespace is None or p.namespace == namespace}
    for verdict in report.status.pods:
        pod = now.pop(verdict.uid, None)
        if pod is None:
            if "Pod" in inventory.read_kinds and (namespace is None or verdict.namespace == namespace):
                verdict.stale = True  # gone, finished or moved since the scan
            continue
        if options is not None and verdict.expected_hash:
            entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
            # the exclusive CPUs the agent used: the kubelet's cpusets when it read them, else the policy's rule
            assignments = verdict.exclusive_cpus if from_state else None
            if predict_pod(pod, entries, options, assignments).fingerprint() != verdict.expected_hash:
                verdict.stale = True
    report.status.unreported_pods = sorted(f"{p.namespace}/{p.name}" for p in now.values())
