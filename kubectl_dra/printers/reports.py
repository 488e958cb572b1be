"""NodeEnforcementReports as a divergence table and a summary (agent scan and ``kubectl dra verify``)."""

from __future__ import annotations

from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import Column, render
from kubectl_dra.verify.report import NodeEnforcementReport

DIVERGENCE_COLUMNS = [Column("NODE"), Column("NAMESPACE"), Column("POD"), Column("CONTAINER"), Column("FILE"),
                      Column("EXPECTED"), Column("OBSERVED"), Column("CAUSE"), Column("SEVERITY", wide_only=True)]


def divergence_table(reports: list[NodeEnforcementReport], *, no_headers: bool = False, wide: bool = False,
                     style: Style | None = None, include_info: bool = True) -> str:
    rows = []
    for report in reports:
        for pod in report.status.pods:
            for d in pod.divergences:
                if d.severity == "info" and not include_info:
                    continue
                rows.append([report.metadata.name, pod.namespace, pod.name,
                             d.container or "<pod>", d.file, d.expected or "<none>", d.observed or "<missing>",
                             f"{d.cause}(stale)" if pod.stale else d.cause, d.severity])
    if not rows:
        return ""
    severity = {r[7]: r[8] for r in rows}

    def colorize(index: int, text: str) -> str:
        if style is None or index != 7:
            return text
        return style.severity(severity.get(text, ""), text)

    return render(DIVERGENCE_COLUMNS, rows, no_headers=no_headers, wide=wide,
                  colorize=colorize if style and style.enabled else None)


def summary_line(reports: list[NodeEnforcementReport]) -> str:
    pods = sum(r.status.summary.pods for r in reports)
    matched = sum(r.status.summary.matched for r in reports)
    diverged = sum(r.status.summary.diverged for r in reports)
    unknown = sum(r.status.summary.unknown for r in reports)
    nodes = f"{len(reports)} node{'s' if len(reports) != 1 else ''}"
    line = f"{nodes}, {pods} pods: {matched} match, {diverged} diverged, {unknown} unknown"
    stale = sum(1 for r in reports for p in r.status.pods if p.stale)
    if stale:
        line += f"; {stale} stale (the pod changed since the scan: not trusted)"
    return line
