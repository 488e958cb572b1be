"""The findings section every explanation tree ends with."""

from __future__ import annotations

from kubectl_dra.document import Finding
from kubectl_dra.printers.style import Style


def findings_lines(findings: list[Finding], style: Style, *, heading: bool = True) -> list[str]:
    lines = [f"{style('Findings', 'bold')} ({len(findings)})"] if heading else []
    lines += [f"  {style.severity(f.severity, f.severity.upper())} {f.code}: {f.message}" for f in findings]
    if heading and not findings:
        lines.append("  none")
    return lines
