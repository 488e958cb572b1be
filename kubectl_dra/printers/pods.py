"""The ``explain pod`` tree: pod -> claims -> devices -> DRA amounts -> cgroups, with reasons.

Describe-style prose, wrapped to the width a person reads (kubectl_dra.text.PROSE_WIDTH); a
cgroup file's reason that does not fit beside its value (TABLE_WIDTH) is a numbered note below the
files."""

from __future__ import annotations

from kubectl_dra.pods.document import PodExplanation
from kubectl_dra.printers.allocation import allocation_lines
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.launch import launch_lines
from kubectl_dra.printers.nodeoptions import node_options_line
from kubectl_dra.printers.scheduling import scheduling_lines
from kubectl_dra.printers.style import Style
from kubectl_dra.quantity import Quantity, in_one_unit
from kubectl_dra.text import TABLE_WIDTH, wrap, wrap_lines


def _files(lines: list[str], files: dict[str, str], because: dict[str, str], style: Style, indent: str) -> None:
    """``name = value   reason`` per file; a reason too long for the line is a note ``[n]`` below
    the files, said once for every file it explains."""
    width = max((len(k) for k in files), default=0)
    value_width = max((len(v) for v in files.values()), default=0)
    notes: dict[str, int] = {}
    for name, value in files.items():
        reason = because.get(name, "")
        head = f"{indent}{name.ljust(width)} = {value.ljust(value_width)}   "
        if len(head) + len(reason) > TABLE_WIDTH:
            reason = f"[{notes.setdefault(reason, len(notes) + 1)}]"
        lines.append(f"{head}{style(reason, 'dim')}".rstrip())
    for reason, n in notes.items():
        mark = f"{indent}[{n}] "
        lines += [style(piece, "dim") for piece in wrap(mark + reason, indent=" " * len(mark))]


def _below(path: str, parent: str | None) -> str:
    """A container's cgroup under its pod's, without repeating the pod's (often 100 columns)."""
    return "<pod-cgroup>/" + path[len(parent) + 1:] if parent and path.startswith(parent + "/") else path


def pod_tree(result: PodExplanation, style: Style) -> str:
    p = result.pod
    lines = [f"{style('Pod', 'bold')} {p.namespace}/{p.name}   uid {p.uid}",
             f"  Node: {p.node or '<unscheduled>'}   QoS: {p.qos_class}   Phase: {p.phase or '<unknown>'}"]
    lines.append(f"{style('Claims', 'bold')} ({len(result.claims)} with node-allocatable amounts)")
    for c in result.claims:
        source = "recorded in pod status" if c.source == "podStatus" else style("computed, not recorded", "yellow")
        applies = "" if c.kubelet_applies else "  " + style("(kubelet does not apply it)", "yellow")
        pod_claim = f" (pod claim {c.pod_claim_name})" if c.pod_claim_name else ""
        lines.append(f"  {c.name}{pod_claim}  {c.generation}, {source}{applies}")
        lines.append(f"    containers: {', '.join(c.containers) or '<none>'}")
        if c.devices:
            lines.append(f"    devices:    {', '.join(c.devices)}")
        for resource, q in sorted(c.mapping.items()):
            lines.append(f"    mapping     {resource} {q} (once per pod, to every listed container)")
        for resource, parts in sorted(c.overhead.items()):
            text = ", ".join(f"{k} {v}" for k, v in parts.items())
            lines.append(f"    overhead    {resource} {text}")
        for resource, q in sorted(c.resources.items()):
            lines.append(f"    resources   {resource} {q} (1.36 shape)")
    lines.append(f"{style('Scheduler counts', 'bold')} (requests on the node, incl. overhead and DRA)")
    for resource, q in result.scheduler.requests.items():
        dra = result.scheduler.dra.get(resource)
        shown = in_one_unit([Quantity.parse(q)] + ([Quantity.parse(dra)] if dra else []))
        lines.append(f"  {resource} {shown[0]}" + (f"   (DRA {shown[1]})" if dra else ""))
    if result.scheduler.note:
        lines.append(f"  {result.scheduler.note}")
    if result.scheduling is not None or result.allocation is not None:  # not on a node: why it is pending
        lines += scheduling_lines(result.scheduling, style)
        lines += allocation_lines(result.allocation, style)
        lines += launch_lines(result.karpenter, style)
        lines += findings_lines(result.findings, style)
        lines.append(style("Cgroup values are predicted for when it runs: -o json (cgroups).", "dim"))
        return "\n".join(wrap_lines(lines)) + "\n"
    lines.append(f"{style('Pod cgroup', 'bold')} {result.cgroups.pod.path or '<unknown>'}")
    if result.cgroups.unknown:
        lines.append("  " + style(f"unknown: {result.cgroups.unknown}", "yellow"))
    if result.cgroups.exclusive_cpus:
        pinned = ", ".join(f"{name} {cpus or '(cpuset chosen by the kubelet)'}"
                           for name, cpus in sorted(result.cgroups.exclusive_cpus.items()))
        lines.append(f"  exclusive CPUs (static CPU manager): {pinned}")
    _files(lines, result.cgroups.pod.files, result.cgroups.pod.because, style, "  ")
    for c in result.cgroups.containers:
        kind = "" if c.type == "container" else f" ({c.type})"
        lines.append(f"{style('Container', 'bold')} {c.name}{kind} {_below(c.path, result.cgroups.pod.path)}")
        _files(lines, c.files, c.because, style, "  ")
    lines += findings_lines(result.findings, style)
    options = node_options_line(result.node_options.model_dump(mode="json", by_alias=True), result.node_options_source)
    lines += [style(piece, "dim") for piece in wrap(options)]
    return "\n".join(wrap_lines(lines)) + "\n"
