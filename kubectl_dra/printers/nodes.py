"""The ``explain node`` tree."""

from __future__ import annotations

from kubectl_dra.nodes.document import NodeExplanation
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.style import Style
from kubectl_dra.text import wrap_lines
from kubectl_dra.quantity import Quantity, in_one_unit
from kubectl_dra.text import plural


def node_tree(result: NodeExplanation, style: Style) -> str:
    n = result.node
    lines = [f"{style('Node', 'bold')} {n.name}   NodePool {n.node_pool or '<none>'}   "
             f"type {n.instance_type or '<unknown>'}   zone {n.zone or '<unknown>'}"]
    lines.append(f"{style('ResourceSlices', 'bold')} ({len(result.resource_slices)})")
    for s in result.resource_slices:
        lines.append(f"  {s.name}  driver {s.driver}  pool {s.pool}  {plural(len(s.devices), 'device')}")
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
        raw = {"requested": result.requested.get(resource, "0"), "dra": result.dra.get(resource),
               "allocatable": n.allocatable.get(resource), "free": result.free.get(resource)}
        shown = dict(zip([k for k, v in raw.items() if v is not None],
                         in_one_unit([Quantity.parse(v) for v in raw.values() if v is not None])))
        dra = f" (DRA {shown['dra']})" if "dra" in shown else ""
        lines.append(f"  {resource}: {shown['requested']}{dra} / {shown.get('allocatable', '<none>')}"
                     f" / {shown.get('free', '<none>')}")
    lines.append(f"{style('Overlays for this NodePool x instance type', 'bold')} ({len(result.overlays)})")
    for o in result.overlays:
        lines.append(f"  {o['name']}  weight {o['weight']}  {o['status']}  sets {', '.join(o['sets']) or '<nothing>'}")
    if result.predicted_resource_slices:
        lines.append(f"{style('Predicted ResourceSlices (proposal)', 'bold')} ({len(result.predicted_resource_slices)})")
    lines += findings_lines(result.findings, style)
    return "\n".join(wrap_lines(lines)) + "\n"
