"""Go durations (``time.ParseDuration``), the form every Kubernetes component reads a duration in:
kubelet's cpuCFSQuotaPeriod, the scheduler's ``filterTimeout``, kubectl's ``--request-timeout``.
One parser, exact to the nanosecond as Go is, so each caller only adds its own range and words."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_UNITS_NS = {"ns": 1, "us": 1000, "\u00b5s": 1000, "\u03bcs": 1000, "ms": 1_000_000, "s": 10**9,
             "m": 60 * 10**9, "h": 3600 * 10**9}
MAX_NS = 2**63 - 1  # time.Duration is an int64 of nanoseconds


def parse_ns(text: str) -> int:
    """Nanoseconds of a Go duration: an optional sign, then ``0`` or one or more ``<number><unit>``
    (ns, us/µs, ms, s, m, h), e.g. ``1m30s``, ``1.5h``, ``-2ms``. ValueError when it is not one, or
    past what a time.Duration holds. A segment's fraction is scaled as Go scales it."""
    body = text if isinstance(text, str) else ""
    sign = -1 if body[:1] == "-" else 1
    body = body[1:] if body[:1] in "+-" and body else body
    if body == "0":
        return 0
    total, position = 0, 0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        whole, _, fraction = match.group(1).partition(".")
        unit = _UNITS_NS[match.group(2)]
        total += int(whole or "0") * unit + _fraction_ns(fraction, unit)
        position = match.end()
    if not body or position != len(body):
        raise ValueError("not a duration")
    if total > MAX_NS + (sign < 0):  # -9223372036854775808ns is the one value past MAX_NS
        raise ValueError("too long")
    return sign * total


def _fraction_ns(digits: str, unit: int) -> int:
    """Go's ``leadingFraction`` and its float64 step: digits past int64 precision are ignored, and
    the fraction is scaled in floating point (so 0.3333333333333333333h is exactly 20m)."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > (2**63 - 1) // 10:
            break
        value, scale = value * 10 + int(digit), scale * 10
    return int(float(value) * (float(unit) / scale)) if value else 0


def parse_seconds(text: str) -> float:
    """Seconds of a Go duration (see :func:`parse_ns`)."""
    return float(parse_ns(text) / 10**9)
