"""The DeviceAvailability as tables: one row per node x driver x pool, or (-o wide, --devices) one
row per device; then the rows whose free count is unknown, and the findings, in words.

FREE is what one request could take together now; REMAINING the shared counters and consumable
capacity left; FITS how many more of each partition type fit. What is neither allocated, free nor
tainted is blocked (counters or capacity used up, the pool unusable): ``blocked`` in the JSON, and
each device's state with --devices. A number that is not known is
``<unknown>``, with the reason below the table, never a number that may be wrong."""

from __future__ import annotations

from kubectl_dra.devices.document import DeviceAvailability, PoolRow
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.output import Printed
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.table import Column, cell, render
from kubectl_dra.text import wrap_lines

UNKNOWN = "<unknown>"
POOL_COLUMNS = [Column("NODE"), Column("DRIVER"), Column("POOL"), Column("TOTAL"), Column("ALLOCATED"),
                Column("FREE"), Column("TAINTED"), Column("ADMIN"), Column("REMAINING"),
                Column("FITS")]
DEVICE_COLUMNS = [Column("NODE"), Column("DEVICE"), Column("STATE"), Column("CLAIM"), Column("PODS"), Column("TAINTS"),
                  Column("HEALTH"), Column("ATTRIBUTES")]


def _remaining(row: PoolRow) -> list[str]:
    """Counters as set/counter, capacities by their short names (the driver's own domain dropped)."""
    return [f"{c.counter_set}/{c.counter}={c.remaining}" for c in row.counters] + \
        [f"{c.name.removeprefix(row.driver + '/')}={c.remaining}" for c in row.capacity]


def _fits(row: PoolRow) -> list[str]:
    return [f"{s.shape}={s.fit if s.fit is not None else '?'}".replace(" ", "") for s in row.shapes]


def pool_rows(result: DeviceAvailability) -> list[list[str]]:
    rows = []
    for row in result.pools:
        free = UNKNOWN if row.free is None else str(row.free)
        rows.append([cell(v) for v in (row.node, row.driver, row.pool, str(row.total), str(row.allocated), free,
                                       str(row.tainted), str(row.admin), _remaining(row),
                                       _fits(row))])
    return rows


def device_rows(result: DeviceAvailability) -> list[list[str]]:
    """A device's attributes by their short names (the driver's own domain dropped); its pods and
    PodGroups once each; its health as a kubelet reported it (``-`` for a device no pod holds: a
    free device's health is not in the API)."""
    rows = []
    for row in result.pools:
        own = row.driver + "/"
        for device in row.devices:
            attributes = [f"{k.removeprefix(own)}={v}" for k, v in device.attributes.items()]
            claims = [h.claim + ("(admin)" if h.admin_access else "") + ("(deleting)" if h.deleting else "")
                      for h in device.holders]
            pods = list(dict.fromkeys([p for h in device.holders for p in h.pods] +
                                      [f"podgroup/{g}" for h in device.holders for g in h.pod_groups]))
            health = device.health or (UNKNOWN if device.holders else "-")
            rows.append([cell(v) for v in (device.node, device.device, device.state, claims, pods, device.taints,
                                           health, attributes)])
    return rows


def devices_table(result: DeviceAvailability, *, devices: bool = False, no_headers: bool = False,
                  style: Style) -> Printed:
    heading = f"Devices of class {result.device_class} only.\n" if result.device_class else ""
    if not result.pools:
        heading += "No devices.\n" if not result.device_class else "No device the class accepts.\n"
        data = ""
    elif devices:
        data = render(DEVICE_COLUMNS, device_rows(result), no_headers=no_headers)
    else:
        data = render(POOL_COLUMNS, pool_rows(result), no_headers=no_headers)
    lines = []
    for row in result.pools:
        where = f"{row.node} {row.driver}/{row.pool}"
        if row.unknown:
            lines.append(f"{where}: free not known: {row.unknown}")
        elif row.free is not None and row.available is not None and row.free < row.available:
            lines.append(f"{where}: {row.available} devices are free one at a time, {row.free} fit together in "
                         "the shared counters")
    if result.findings:
        lines += findings_lines(result.findings, style)
    return Printed(data, prose="".join(line + "\n" for line in wrap_lines(lines)), heading=heading)
