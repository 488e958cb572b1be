"""The ``kubectl dra claims`` table and ``-o name`` (the ``explain claim`` tree is in claim_tree).

The default columns are what a person scans, as ``kubectl get`` keeps them (about 115 columns on the
example cluster with -A): STATE already says whether a claim is reserved; who holds it (a list that
can run to 256 entries), and the rest, are -o wide's."""

from __future__ import annotations

from datetime import datetime

from typing import TYPE_CHECKING, Sequence

from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import NONE, Column, cell, human_age, render

if TYPE_CHECKING:
    from kubectl_dra.claims.summary import ClaimList

CLAIM_COLUMNS = [
    Column("NAMESPACE"), Column("NAME"), Column("STATE"), Column("NODE"), Column("DEVICES"),
    Column("RESERVED-FOR", wide_only=True), Column("AGE"),
    Column("DRIVER", wide_only=True), Column("POOL", wide_only=True), Column("PODS", wide_only=True),
    Column("GROUPS", wide_only=True), Column("NODE-ALLOCATABLE", wide_only=True), Column("FINDINGS", wide_only=True),
]
EVENT_COLUMN = Column("EVENT")  # kubectl get -w --output-watch-events
STATE_COLOR = {"pending": "yellow", "allocated": "green", "reserved": "green", "deleted": "red"}


def node_allocatable_cell(mapping: dict[str, str], overhead: dict[str, dict[str, str]]) -> str:
    """``cpu=10`` for what devices map to, ``memory/pod=1Gi,memory/container=512Mi`` for overhead."""
    items = [f"{k}={v}" for k, v in mapping.items()]
    for resource, parts in overhead.items():
        for part, label in (("perPod", "pod"), ("perContainer", "container")):
            if part in parts:
                items.append(f"{resource}/{label}={parts[part]}")
    return cell(items)


def claim_table(result: ClaimList, *, now: datetime, all_namespaces: bool, wide: bool, no_headers: bool,
                style: Style, events: Sequence[str] | None = None) -> str:
    """``events``: a first EVENT column, one watch event type per row (``--output-watch-events``)."""
    rows = []
    for item in result.items:
        row = [item.namespace, item.name, cell(item.state), item.node or NONE,
               cell([d.rsplit("/", 1)[-1] for d in item.devices]),
               cell(item.reserved_for) if wide else "",
               human_age(item.creation_timestamp, now)]
        if wide:  # the wide-only cells, only when they are printed
            row += [cell(item.drivers), cell(item.pools), cell(item.pods), cell(item.groups),
                    node_allocatable_cell(item.node_allocatable, item.node_allocatable_overhead), cell(item.findings)]
        else:
            row += [""] * 6
        rows.append(row)
    columns = CLAIM_COLUMNS if all_namespaces else CLAIM_COLUMNS[1:]
    if not all_namespaces:
        rows = [r[1:] for r in rows]
    if events is not None:
        columns = [EVENT_COLUMN, *columns]
        rows = [[event, *row] for event, row in zip(events, rows)]
    state_index = [c.header for c in columns].index("STATE")

    def colorize(index: int, text: str) -> str:
        if index != state_index:
            return text
        return style(text, STATE_COLOR.get(text.split(",")[-1], ""))

    return render(columns, rows, wide=wide, no_headers=no_headers, colorize=colorize if style.enabled else None)


def claim_names(result: ClaimList) -> list[str]:
    return [f"resourceclaim.resource.k8s.io/{item.name}" for item in result.items]
