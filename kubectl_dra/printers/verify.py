"""The text views of the node scan's documents: ``kubectl dra verify`` (a NodeEnforcementReportList,
one node or many) and ``dra-node-agent scan --once`` (one NodeEnforcementReport). json and yaml are
the documents themselves (:func:`kubectl_dra.printers.output.emit`)."""

from __future__ import annotations

from kubectl_dra.env import Environment
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import Printed, emit
from kubectl_dra.printers.reports import claims_table, divergence_table, options_lines, summary_line
from kubectl_dra.printers.style import Style
from kubectl_dra.text import plural
from kubectl_dra.verify.report import NodeEnforcementReport, VerifyResult


def verify_text(result: VerifyResult, output: OutputOptions, style: Style,
                pods_not_checked: dict[str, int] | None = None) -> Printed:
    """The divergences, the claims with findings (every claim with -o wide), then in words: the
    summary, pods the reports do not cover, nodes without a report (``pods_not_checked``: how many
    pods each runs) and, for one node or -o wide, the node options each prediction used."""
    reports = result.items
    data = divergence_table(reports, no_headers=output.no_headers, wide=output.wide, style=style)
    claims = claims_table(reports, no_headers=output.no_headers, wide=output.wide, style=style,
                          only_findings=not output.wide)
    if claims:
        data += ("\n" if any(p.divergences for r in reports for p in r.status.pods) else "") + claims
    prose = [summary_line(reports)]
    prose += [f"{r.metadata.name}: not in the report (created after its scan): {', '.join(r.status.unreported_pods)}"
              for r in reports if r.status.unreported_pods]
    if result.nodes_without_report:
        counts = pods_not_checked or {}
        prose.append("Nodes without a report: " + ", ".join(
            f"{n} ({plural(counts[n], 'pod')} not checked)" if counts.get(n) else n
            for n in result.nodes_without_report))
    if output.wide or len(reports) == 1:
        prose += options_lines(reports)
    return Printed(data=data, prose="".join(line + "\n" for line in prose))


def scan_text(report: NodeEnforcementReport, output: OutputOptions, style: Style) -> Printed:
    """Every claim the node holds (the agent's view is the node's, not a filter of it), the
    divergences when the tree is cgroup v2 (otherwise every pod would repeat the same reason), the
    summary and the node options."""
    data = ""
    if report.status.cgroup_version == "v2":
        data += divergence_table([report], no_headers=output.no_headers, wide=output.wide, style=style)
    if report.status.claims:
        data += claims_table([report], no_headers=output.no_headers, wide=output.wide, style=style)
    prose = [summary_line([report]), *options_lines([report])]
    return Printed(data=data, prose="".join(line + "\n" for line in prose))


def print_scan(env: Environment, report: NodeEnforcementReport, output: OutputOptions) -> None:
    emit(env, report, output, text=lambda: scan_text(report, output, Style(env.use_color)))


def print_verify(env: Environment, result: VerifyResult, output: OutputOptions,
                 pods_not_checked: dict[str, int] | None = None) -> None:
    emit(env, result, output, text=lambda: verify_text(result, output, Style(env.use_color), pods_not_checked))
