"""The TaintExplanation as a table: one row per device and claim (or per device without claims),
then each finding in words."""

from __future__ import annotations

from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import Column, cell, render
from kubectl_dra.taints.explain import TaintExplanation

COLUMNS = [Column("DEVICE"), Column("NODE"), Column("TAINTS"), Column("CLAIM"), Column("PODS"), Column("OUTCOME"),
           Column("SOURCE", wide_only=True), Column("SINCE", wide_only=True), Column("EVICT-AT", wide_only=True)]


def taint_table(result: TaintExplanation, *, wide: bool = False, no_headers: bool = False, style: Style) -> str:
    rows = []
    for device in result.devices:
        taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in device.taints]
        sources = sorted({t.source for t in device.taints})
        since = sorted({t.time_added for t in device.taints if t.time_added})
        common = [device.device, device.node or "<none>", taints]
        for consumer in device.consumers or [None]:
            if consumer is None:
                rows.append([cell(v) for v in (*common, "<none>", "<none>", "-", sources, since, None)])
            else:
                rows.append([cell(v) for v in (*common, consumer.claim, consumer.pods, consumer.outcome, sources, since,
                                               consumer.evict_at)])
    head = "Dry run of DeviceTaintRule " + result.rule + ": nothing was applied\n" if result.dry_run else ""
    if not rows:
        body = "No tainted devices.\n" if not result.dry_run else "The rule selects no device.\n"
    else:
        body = render(COLUMNS, rows, no_headers=no_headers, wide=wide)
    lines = findings_lines(result.findings, style) if result.findings else []
    return head + body + "".join(line + "\n" for line in lines)
