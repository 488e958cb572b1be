"""Karpenter's ``AdjustedPrice``: what a ``price`` / ``priceAdjustment`` string does to a price.

Plain float64 arithmetic with no rounding, because that is what Karpenter compares and sorts
offerings by (``0.096`` with ``+10%`` really is ``0.10560000000000001`` there too).
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)


def _float(text: str, change: str) -> float:
    # Go's ParseFloat would also take "inf", "1e3" or "0x1p3"; the CRD patterns never let those
    # through, so refusing them here keeps a hand-written snapshot from producing nonsense.
    if not _DECIMAL.fullmatch(text):
        raise ValueError(f"invalid price change {change!r}")
    return float(text)


def adjusted_price(change: str, base: float) -> float:
    """Empty: unchanged; unsigned: absolute price; ``±p%``: base×(1+p/100); ``±x``: base+x; floor 0."""
    if change == "":
        return base
    if not change.startswith(("+", "-")):
        return _float(change, change)
    if change.endswith("%"):
        result = base * (1 + _float(change[:-1], change) / 100)
    else:
        result = base + _float(change, change)
    return 0.0 if result < 0 else result


def is_absolute(change: str) -> bool:
    """An absolute price does not need the base price (it is known even when the base is not)."""
    return change != "" and not change.startswith(("+", "-"))
