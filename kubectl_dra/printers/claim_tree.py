"""The ``kubectl dra explain claim`` tree."""

from __future__ import annotations

from kubectl_dra.claims.document import ClaimExplanation
from kubectl_dra.printers.allocation import allocation_lines
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.style import Style
from kubectl_dra.text import wrap_lines
from kubectl_dra.printers.table import scalar


def claim_tree(result: ClaimExplanation, style: Style) -> str:
    c = result.claim
    lines = [f"{style('ResourceClaim', 'bold')} {c.namespace}/{c.name}   uid {c.uid}",
             f"  State:  {','.join(c.state)}",
             f"  Node:   {c.node or '<none>'}"]
    if c.deletion_timestamp:
        lines.append(f"  Deleted at {c.deletion_timestamp}; finalizers: {', '.join(c.finalizers) or '<none>'}")
    lines.append(f"{style('Devices', 'bold')} ({len(result.devices)})")
    for d in result.devices:
        share = f"  shareID {d.share_id}" if d.share_id else ""
        missing = "  " + style("NOT IN ANY RESOURCESLICE", "red") if not d.found else ""
        klass = f"  class {d.device_class_name}" if d.device_class_name else ""
        if d.device_class_found is False:
            klass += " " + style("(no such DeviceClass)", "yellow")
        admin = "  adminAccess" if d.admin_access else ""
        lines.append(f"  {d.driver}/{d.pool}/{d.device}  request {d.request}{klass}{share}{admin}{missing}")
        if d.attributes:
            lines.append("    attributes: " + " ".join(f"{k}={scalar(v)}" for k, v in sorted(d.attributes.items())))
        if d.capacity:
            lines.append("    capacity:   " + " ".join(f"{k}={v}" for k, v in sorted(d.capacity.items())))
        if d.consumed_capacity:
            lines.append("    consumed:   " + " ".join(f"{k}={v}" for k, v in sorted(d.consumed_capacity.items())))
        if d.node_allocatable:
            lines.append("    node-allocatable mapping:  "
                         + " ".join(f"{k}={v}" for k, v in sorted(d.node_allocatable.items())))
        for resource, parts in sorted(d.node_allocatable_overhead.items()):
            lines.append(f"    node-allocatable overhead: {resource} "
                         + " ".join(f"{k}={v}" for k, v in parts.items()))
        for cond in d.conditions:
            lines.append(f"    condition {cond['type']}={cond['status']} {cond.get('reason') or ''}".rstrip())
        for taint in d.taints:
            value = f"={taint['value']}" if taint.get("value") else ""
            effect = taint.get("effect") or "<unknown>"  # the API requires one: empty, it did not validate
            lines.append(f"    taint {taint.get('key', '')}{value}:{effect} ({taint.get('source', 'slice')}"
                         + (f", since {taint['timeAdded']}" if taint.get("timeAdded") else "") + ")")
        if d.network_data:
            lines.append("    network: " + " ".join(f"{k}={scalar(v)}" for k, v in d.network_data.items()))
    lines.append(f"{style('Reserved for', 'bold')} ({len(result.reserved_for)} of {result.reserved_for_limit})")
    for r in result.reserved_for:
        kind = r.resource[:-1] if r.resource.endswith("s") else r.resource
        state = r.resolved if r.resolved == "exists" else style(r.resolved, "yellow")
        where = f" on {r.node}" if r.node else ""
        pods = f"  pods: {', '.join(r.pods)}" if r.pods and kind != "pod" else ""
        deleting = "  " + style("deleting", "yellow") if r.deleting else ""
        lines.append(f"  {kind}/{r.name}  uid {r.uid or '<unset>'}  {state}{where}{pods}{deleting}")
    lines.append(f"{style('Consumers', 'bold')} ({len(result.consumers)})")
    for u in result.consumers:
        reserved = "reserved" if u.reserved else style("NOT reserved", "red")
        lines.append(f"  {u.pod}  {reserved}  {u.phase or '<unknown>'} on {u.node or '<unscheduled>'}  via {u.via}")
        if u.extended:  # the scheduler made the claim for these containers' extended resources
            lines.append(f"    made by the scheduler for: {', '.join(u.extended)}")
    if result.node_view:
        lines.append(f"{style('On the node', 'bold')} (the agent's report)")
    for v in result.node_view:
        prepared = {True: "prepared", False: style("NOT prepared", "red"), None: "preparation unknown"}[v.prepared]
        held = f" for {', '.join(v.prepared_for)}" if v.prepared_for else ""
        lines.append(f"  {v.node}  {prepared}{held}  (from {', '.join(v.sources) or 'no source'}, {v.observed_at})")
        if v.devices:
            lines.append(f"    devices: {', '.join(v.devices)}")
        if v.cdi_devices:
            lines.append(f"    CDI:     {', '.join(v.cdi_devices)}")
    lines += allocation_lines(result.allocation, style)
    lines += findings_lines(result.findings, style)
    return "\n".join(wrap_lines(lines)) + "\n"
