"""The ``explain node`` tree."""

from __future__ import annotations

from kubectl_dra.nodes.explain import NodeExplanation
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.style import Style


def node_tree(result: NodeExplanation, style: Style) -> str:
    n = result.node
    lines = [f"{style('Node', 'bold')} {n.name}   NodePool {n.node_pool or '<none>'}   "
             f"type {n.instance_type or '<unknown>'}   zone {n.zone or '<unknown>'}"]
    lines.append(f"{style('ResourceSlices', 'bold')} ({len(result.resource_slices)})")
    for s in result.resource_slices:
        lines.append(f"  {s.name}  driver {s.driver}  pool {s.pool}  {len(s.devices)} devices")
        for d in s.devices:
            mapping = "  " + "; ".join(f"{k}: " + ", ".join(f"{a} {v}" for a, v in parts.items())
                                       for k, parts in d.node_allocatable.items()) if d.node_allocatable else ""
            held = f"  -> {', '.join(d.allocated_to)}" if d.allocated_to else ""
            lines.append(f"    {d.name}{mapping}{held}")
    lines.append(f"{style('Claims allocated here', 'bold')} ({len(result.claims)})")
    for c in result.claims:
        lines.append(f"  {c.namespace}/{c.name}  {', '.join(d.rsplit('/', 1)[-1] for d in c.devices)}  "
                     f"pods: {', '.join(c.pods) or '<none>'}")
    lines.append(f"{style('Scheduler counts', 'bold')} (requested incl. DRA / allocatable / free)")
    for resource in sorted(set(result.requested) | set(n.allocatable)):
        dra = f" (DRA {result.dra[resource]})" if resource in result.dra else ""
        lines.append(f"  {resource}: {result.requested.get(resource, '0')}{dra} / {n.allocatable.get(resource, '<none>')}"
                     f" / {result.free.get(resource, '<none>')}")
    lines.append(f"{style('Overlays for this NodePool x instance type', 'bold')} ({len(result.overlays)})")
    for o in result.overlays:
        lines.append(f"  {o['name']}  weight {o['weight']}  {o['status']}  sets {', '.join(o['sets']) or '<nothing>'}")
    if result.predicted_resource_slices:
        lines.append(f"{style('Predicted ResourceSlices (proposal)', 'bold')} ({len(result.predicted_resource_slices)})")
    lines += findings_lines(result.findings, style)
    return "\n".join(lines) + "\n"
