"""kubectl-style tables: upper-case headers, columns padded by three spaces, no spaces in cells.

``<none>`` marks an empty list and ``<unset>`` an unset scalar, as kubectl prints them. A cell
holding a line break is cut there with "..." and its control characters are escaped, as kubectl's
table printer does, so every row stays one aligned line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Sequence

from kubectl_dra.text import COLOR_MARK, terminal_safe, width as _width

NONE = "<none>"
UNSET = "<unset>"
_BREAK = re.compile("[\n\r\f\v\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines breaks at
_CELL_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # a break or a control


@dataclass(frozen=True)
class Column:
    header: str
    wide_only: bool = False


LIST_SHOWN = 5
"""Items a list cell shows before it is cut (``a,b,c,d,e + 245 more...``, as kubectl's Endpoints
printer cuts its list): a claim with 250 consumers must not print a 15,000-character row. ``-o
json`` and ``-o yaml`` keep every item."""


def cell(value: object, empty: str = NONE) -> str:
    """One table cell: lists joined by commas and cut after :data:`LIST_SHOWN` items, no whitespace
    inside an item (kubectl-conventions)."""
    if value is None:
        return UNSET
    more = 0
    if isinstance(value, (list, tuple)):
        more = max(0, len(value) - LIST_SHOWN)
        text = ",".join(map(str, value[:LIST_SHOWN]))
    else:
        text = str(value)
    text = "-".join(text.split()) or empty  # runs of whitespace -> "-", ends trimmed
    return f"{text} + {more} more..." if more else text


def scalar(value: object) -> str:
    """A value in a ``key=value`` list as YAML and kubectl spell it: true/false, quoted when empty
    or holding spaces (so the list stays readable), lists joined by commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<none>"
    if isinstance(value, (list, tuple)):
        return ",".join(scalar(v) for v in value)
    text = str(value)
    if not text or any(c.isspace() for c in text) or '"' in text:
        return json.dumps(text, ensure_ascii=False)
    return text


def safe_cell(text: str) -> str:
    """kubectl's cell rule (cli-runtime tableprinter): cut at the first line break with "...", escape
    the rest; a tab, which would break the alignment, as ^I."""
    cut = _BREAK.search(text)
    if cut:
        text = text[:cut.start()] + "..."
    return terminal_safe(text).replace("\t", "^I")


def render(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, wide: bool = False,
           no_headers: bool = False, colorize: Callable[[int, str], str] | None = None) -> str:
    """Aligned text; ``colorize(column_index, text)`` may wrap a padded cell in colour."""
    keep = [i for i, c in enumerate(columns) if wide or not c.wide_only]
    table = [[columns[i].header for i in keep]] if not no_headers else []
    table += [[safe_cell(row[i]) for i in keep] if _CELL_UNSAFE.search("".join(row)) else [row[i] for i in keep]
              for row in rows]
    if not table:
        return ""
    widths, escaped = [], False
    for column in zip(*table):
        if COLOR_MARK in "".join(column):  # colour codes take no room: measure those cells without them
            escaped = True
            widths.append(max(map(_width, column)))
        else:
            widths.append(max(map(len, column)))
    last = len(keep) - 1
    if colorize is None and not escaped:  # the common case, done by C string methods row by row
        padded = [w + 3 for w in widths[:-1]] + [0]
        return "\n".join(["".join(map(str.ljust, r, padded)).rstrip() for r in table]) + "\n"
    lines = []
    for n, r in enumerate(table):
        if colorize is None or (n == 0 and not no_headers):
            line = "".join(text + " " * (widths[j] - _width(text) + 3) if j < last else text
                           for j, text in enumerate(r))
        else:
            line = "".join((colorize(keep[j], text) + " " * (widths[j] - _width(text) + 3)) if j < last
                           else colorize(keep[j], text) for j, text in enumerate(r))
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def human_age(created: datetime | None, now: datetime) -> str:
    """kubectl's HumanDuration of ``now - created``."""
    if created is None:
        return "<unknown>"
    seconds = int((now - created).total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"
