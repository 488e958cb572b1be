"""Waits that end on what happens, bounded by progress rather than by one fixed number.

Under emulation the same step takes twice as long on a loaded machine as on an idle one, so a
fixed deadline either fails a slow but healthy run or waits far too long for a stuck one. Here a
step may take as long as it keeps moving: ``progress()`` says how far it has got (bytes written,
pods started, scans done), and only ``stall`` seconds without any change fail it, naming where it
stuck and the last thing seen. ``ceiling`` is the backstop for a step whose progress never ends.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class Stuck(AssertionError):
    """A step made no progress for its stall time; the message says which step and what was last seen."""


def until(what: str, check: Callable[[], T], *, progress: Callable[[], object] | None = None,
          stall: float = 120.0, ceiling: float = 1800.0, every: float = 1.0,
          detail: Callable[[], str] | None = None) -> T:
    """``check()``'s first truthy value. Fails after ``stall`` seconds in which ``progress()`` (when
    given) did not change, or with no progress function after ``stall`` seconds; ``detail()`` adds
    what a reader needs to see why (a log's end). Exceptions from ``check`` count as "not yet"."""
    began = last_change = time.monotonic()
    seen = progress() if progress is not None else None
    last: object = None
    while True:
        try:
            last = check()
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last  # type: ignore[return-value]
        now = time.monotonic()
        if progress is not None:
            current = progress()
            if current != seen:
                seen, last_change = current, now
        if now - last_change > stall or now - began > ceiling:
            why = (f"no progress for {now - last_change:.0f}s (last: {seen!r})" if now - last_change > stall
                   else f"still moving after the {ceiling:.0f}s ceiling (at {seen!r})")
            extra = f"\n{detail()}" if detail is not None else ""
            raise Stuck(f"{what}: {why}; {now - began:.0f}s in all; last check: {last!r}{extra}")
        time.sleep(every)
