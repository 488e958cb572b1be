"""The ``overlays`` tables: offerings with price provenance, then one line per overlay, then the
findings in words below them (on stderr with --no-headers, whose output is for pipes).

The default columns are what a person scans (about 105 columns on the example cluster); the
capacity overlays add, the allocatable memory and the source of each instance type, and what each
overlay sets and in which order, are -o wide's."""

from __future__ import annotations

from kubectl_dra.overlays.document import OverlayExplanation
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.output import Printed
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import NONE, Column, cell, render
from kubectl_dra.text import wrap_lines

OFFERING_COLUMNS = [Column("NODEPOOL"), Column("INSTANCE-TYPE"), Column("CAPACITY-TYPE"), Column("ZONE"),
                    Column("PRICE"), Column("OVERLAY"), Column("CAPACITY", wide_only=True),
                    Column("ALLOCATABLE-MEMORY", wide_only=True), Column("SOURCE", wide_only=True)]
OVERLAY_COLUMNS = [Column("OVERLAY"), Column("WEIGHT"), Column("STATUS"), Column("MATCHES"),
                   Column("CONFLICTS-WITH"), Column("SHADOWED-BY"), Column("SETS", wide_only=True),
                   Column("ORDER", wide_only=True)]


def _price(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.6f}".rstrip("0").rstrip(".")


def filter_result(result: OverlayExplanation, pools: set[str], types: set[str], names: set[str]) -> OverlayExplanation:
    """Narrow the rows (and the overlay summary with --overlay); findings stay complete."""
    instance_types = [it for it in result.instance_types
                      if (not pools or it.node_pool in pools) and (not types or it.name in types)
                      and (not names or any(o.overlay in names for o in it.offerings)
                           or names & set(it.capacity_overlays.values()))]
    overlays = [o for o in result.overlays if not names or o.name in names]
    return result.model_copy(update={"instance_types": instance_types, "overlays": overlays})


def overlay_tables(result: OverlayExplanation, *, wide: bool, no_headers: bool, style: Style) -> Printed:
    rows = []
    for it in result.instance_types:
        added = [f"+{k}={v}({it.capacity_overlays[k]})" for k, v in sorted(it.capacity.items()) if k in it.capacity_overlays]
        for offering in it.offerings:
            base, final = _price(offering.base_price), _price(offering.price)
            price = base if base == final else f"{base}->{final}"
            rows.append([it.node_pool, it.name, offering.capacity_type or NONE, offering.zone or NONE, price,
                         offering.overlay or NONE, cell(added), it.allocatable_memory or NONE, it.source])
    text = render(OFFERING_COLUMNS, rows, wide=wide, no_headers=no_headers) if rows else ""
    heading = "" if rows else "No instance types.\n"
    summary = []
    for o in result.overlays:
        status = o.status
        summary.append([o.name, "<unset>" if o.weight is None else str(o.weight), status,
                        str(len(o.matches)), cell(o.conflicts_with + [f"{n}(undetected)" for n in o.undetected_conflicts_with]),
                        cell(o.shadowed_by), cell(o.sets), str(o.order)])
    if summary:
        colors = {"Ready": "green", "Conflict": "red", "RuntimeValidation": "red"}
        status_index = 2

        def colorize(index: int, value: str) -> str:
            return style(value, colors.get(value, "")) if index == status_index else value

        text += ("\n" if text else "") + render(
            OVERLAY_COLUMNS, summary, wide=wide, no_headers=no_headers, colorize=colorize if style.enabled else None)
    prose = ""
    if result.findings:
        lines = wrap_lines([line.strip() for line in findings_lines(result.findings, style, heading=False)])
        prose = ("\n" if not no_headers else "") + "".join(line + "\n" for line in lines)
    return Printed(text, prose=prose, heading=heading)
