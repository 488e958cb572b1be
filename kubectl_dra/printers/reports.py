"""NodeEnforcementReports as a divergence table, a table of the node's DRA claims, and a summary
(agent scan and ``kubectl dra verify``).

The default columns are what a person scans (under 120 columns on the example cluster); the node,
the severity, and the claims' holders, devices and sources are -o wide's. Each claim finding is
then said in words below the table (not with --no-headers, whose output is for pipes)."""

from __future__ import annotations

from kubectl_dra.printers.nodeoptions import node_options_line
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import Column, cell, render
from kubectl_dra.text import plural, wrap_lines
from kubectl_dra.verify.report import NodeEnforcementReport

DIVERGENCE_COLUMNS = [Column("NODE", wide_only=True), Column("NAMESPACE"), Column("POD"), Column("CONTAINER"),
                      Column("FILE"), Column("EXPECTED"), Column("OBSERVED"), Column("CAUSE"), Column("SEVERITY", wide_only=True)]


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


CLAIM_COLUMNS = [Column("NODE", wide_only=True), Column("NAMESPACE"), Column("CLAIM"), Column("PREPARED"),
                 Column("PREPARED-FOR", wide_only=True), Column("DEVICES", wide_only=True), Column("FINDINGS"),
                 Column("CDI-DEVICES", wide_only=True), Column("SOURCES", wide_only=True)]


def claims_table(reports: list[NodeEnforcementReport], *, no_headers: bool = False, wide: bool = False,
                 style: Style | None = None, only_findings: bool = False) -> str:
    """The node's DRA claims (prepared or not, for whom, which devices), then each finding in words
    (not with ``no_headers``: the FINDINGS column names them)."""
    rows, notes = [], []
    for report in reports:
        for claim in report.status.claims:
            if only_findings and not claim.findings:
                continue
            prepared = "unknown" if claim.prepared is None else ("true" if claim.prepared else "false")
            rows.append([cell(v) for v in (report.metadata.name, claim.namespace, claim.name, prepared,
                                           claim.prepared_for, claim.devices, sorted({f.code for f in claim.findings}),
                                           claim.cdi_devices, claim.sources)])
            for finding in claim.findings:
                code = style.severity(finding.severity, finding.code) if style and style.enabled else finding.code
                notes.append(f"{report.metadata.name} {claim.namespace}/{claim.name}: {code} ({finding.severity}): "
                             f"{finding.message}")
    if not rows:
        return ""
    table = render(CLAIM_COLUMNS, rows, no_headers=no_headers, wide=wide)
    if no_headers or not notes:
        return table
    return table + "\n" + "".join(f"{n}\n" for n in wrap_lines(notes))


def summary_line(reports: list[NodeEnforcementReport]) -> str:
    """What was checked and how it came out, in the terms the exit code uses: stale verdicts (the
    pod changed since the scan) are neither match nor divergence."""
    pods = [p for r in reports for p in r.status.pods]
    nodes = plural(len(reports), "node")
    claims = [c for r in reports for c in r.status.claims]
    claims_part = ""
    if claims:
        found = sum(1 for c in claims for f in c.findings if f.severity != "info")
        claims_part = f"; {plural(len(claims), 'claim')} compared with the node: {plural(found, 'finding')}"
    if not pods:
        return f"{nodes}: no pods to check (nothing was verified){claims_part}"
    stale = [p for p in pods if p.stale]
    current = [p for p in pods if not p.stale]
    count = lambda verdict: sum(p.verdict == verdict for p in current)  # noqa: E731
    line = (f"{nodes}, {plural(len(pods), 'pod')}: {count('Match')} match, "
            f"{count('Diverged')} diverged, {count('Unknown')} unknown")
    if stale:
        line += f", {len(stale)} stale (the pod changed since the scan: not trusted)"
    return line + claims_part


def options_lines(reports: list[NodeEnforcementReport]) -> list[str]:
    """Per node, the node options its prediction used and where each came from."""
    return wrap_lines([f"{r.metadata.name}: {node_options_line(r.status.node_options, r.status.node_options_source)}"
                       for r in reports if r.status.node_options])


def unverified_pods(reports: list[NodeEnforcementReport], limit: int = 5) -> str:
    """The pods whose verdict is Unknown or stale, each with why (its first cause), for the
    warning that makes the result partial: the cause is named on stderr, not only in a table row."""
    named = []
    for report in reports:
        for pod in report.status.pods:
            if pod.stale:
                named.append(f"{pod.namespace}/{pod.name} (stale: it changed since the scan)")
            elif pod.verdict == "Unknown":
                first = next((d for d in pod.divergences if d.cause), None)
                why = f"{first.cause}: {first.message}" if first and first.message else (first.cause if first else "unknown")
                named.append(f"{pod.namespace}/{pod.name} ({why})")
    shown = "; ".join(named[:limit])
    return shown + (f"; and {len(named) - limit} more" if len(named) > limit else "")
