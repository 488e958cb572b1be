"""The TaintExplanation as a table: one row per device and claim (or per device without claims),
then each finding in words.

The default columns are what a person scans (under 120 columns on the example cluster): the
device, its strongest taint effect (NoExecute over NoSchedule: the one that decides), the claim,
how many pods it has and what happens to them. -o wide adds the node, the taints in full
(key=value:effect), the pods by name, where each taint came from, since when, and when the eviction
happens."""

from __future__ import annotations

from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.output import Printed
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import Column, cell, render
from kubectl_dra.printers.claims import EVENT_COLUMN
from kubectl_dra.taints.document import TaintedDevice, TaintExplanation
from kubectl_dra.text import wrap_lines

EFFECT_ORDER = {"NoExecute": 0, "NoSchedule": 1}  # the strongest effect decides what happens to the pods
COLUMNS = [Column("DEVICE"), Column("NODE", wide_only=True), Column("EFFECT"), Column("TAINTS", wide_only=True),
           Column("CLAIM"), Column("PODS"), Column("OUTCOME"),
           Column("SOURCE", wide_only=True), Column("SINCE", wide_only=True), Column("EVICT-AT", wide_only=True)]


def device_rows(device: TaintedDevice, *, wide: bool = False) -> list[list[str]]:
    """One device's rows: one per claim allocated it, or one saying no claim has it."""
    rows = []
    taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in device.taints]
    effects = sorted({t.effect for t in device.taints if t.effect},
                     key=lambda e: EFFECT_ORDER.get(e, len(EFFECT_ORDER)))[:1]
    if device.unknown and not effects:
        effects = "<unknown>"  # a taint whose effect did not validate might have any effect
    sources = sorted({t.source for t in device.taints})
    since = sorted({t.time_added for t in device.taints if t.time_added})
    common = [device.device, device.node or "<none>", effects, taints]
    for consumer in device.consumers or [None]:
        if consumer is None:
            rows.append([cell(v) for v in (*common, "<none>", "<none>" if wide else "0", "-", sources, since,
                                           None)])
        else:  # the pods by name in -o wide; the default says how many
            pods = consumer.pods if wide else str(len(consumer.pods))
            rows.append([cell(v) for v in (*common, consumer.claim, pods, consumer.outcome, sources, since,
                                           consumer.evict_at)])
    return rows


def device_table(devices: list[TaintedDevice], *, wide: bool = False, no_headers: bool = False,
                 events: list[str] | None = None) -> str:
    """The rows of these devices; ``events``: a first EVENT column, one watch event type per device."""
    rows, columns = [], COLUMNS
    for n, device in enumerate(devices):
        rows += [[events[n], *row] if events is not None else row for row in device_rows(device, wide=wide)]
    if events is not None:
        columns = [EVENT_COLUMN, *COLUMNS]
    return render(columns, rows, no_headers=no_headers, wide=wide) if rows else ""


def taint_table(result: TaintExplanation, *, wide: bool = False, no_headers: bool = False, style: Style,
                events: list[str] | None = None) -> Printed:
    heading = "Dry run of DeviceTaintRule " + result.rule + ": nothing was applied\n" if result.dry_run else ""
    if not result.devices:
        heading += "No tainted devices.\n" if not result.dry_run else "The rule selects no device.\n"
    data = device_table(result.devices, wide=wide, no_headers=no_headers, events=events)
    lines = wrap_lines(findings_lines(result.findings, style)) if result.findings else []
    return Printed(data, prose="".join(line + "\n" for line in lines), heading=heading)
