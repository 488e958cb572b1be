"""How many devices of a partitionable pool can be allocated together: the largest set of devices
whose shared-counter consumption fits what the cluster's allocations leave, which is what the
scheduler's search (complete, in device order) finds for one request of that many devices.

The problem is a multi-dimensional packing; pools are small (a slice holds at most 128 devices),
so a bounded branch and bound is exact in practice. When the bound is reached the answer is a
range, never a guess (``Packing.exact``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

Need = dict[tuple[str, str], Fraction]  # (counter set, counter) -> amount


@dataclass(frozen=True, slots=True)
class Packing:
    best: int  # a set this large fits (found)
    upper: int  # no larger set fits (proved)

    @property
    def exact(self) -> bool:
        return self.best == self.upper


def _upper(items: list[Need], left: dict[tuple[str, str], Fraction], base: int) -> int:
    """``base`` + the most ``items`` any one counter allows (smallest needs first), the least over counters."""
    bound = len(items)
    for key, room in left.items():
        needs = sorted(item.get(key, Fraction(0)) for item in items)
        taken, used = 0, Fraction(0)
        for need in needs:
            if used + need > room:
                break
            used += need
            taken += 1
        bound = min(bound, taken)
    return base + bound


def most_at_once(items: list[Need], available: dict[tuple[str, str], Fraction], budget: int = 200_000) -> Packing:
    """The most ``items`` that fit ``available`` together (each counter's needs summed); an item
    that needs nothing always fits. ``budget``: search steps before the answer becomes a range."""
    free = sum(1 for item in items if not any(item.values()))
    rest = [item for item in items if any(item.values())]
    if not rest:
        return Packing(free, free)
    left = {key: value for key, value in available.items()}
    for item in rest:
        for key in item:
            left.setdefault(key, Fraction(0))  # an unknown counter has nothing (the pool is invalid then)
    rest.sort(key=lambda item: sum(v / left[k] if left[k] > 0 else Fraction(10**9) for k, v in item.items()))
    upper = _upper(rest, left, free)
    best = 0
    room = dict(left)
    for item in rest:  # greedy: a first answer, often the last
        if all(room[k] >= v for k, v in item.items()):
            for k, v in item.items():
                room[k] -= v
            best += 1
    if free + best == upper:
        return Packing(upper, upper)
    steps = 0

    def search(index: int, taken: int, room: dict) -> bool:
        """Depth first, taking before leaving; True when the budget ran out."""
        nonlocal best, steps
        steps += 1
        if steps > budget:
            return True
        if taken > best:
            best = taken
        if free + best == upper or index == len(rest) or taken + len(rest) - index <= best:
            return False
        if _upper(rest[index:], room, taken) <= best:
            return False
        item = rest[index]
        if all(room[k] >= v for k, v in item.items()):
            for k, v in item.items():
                room[k] -= v
            stopped = search(index + 1, taken + 1, room)
            for k, v in item.items():
                room[k] += v
            if stopped:
                return True
        return search(index + 1, taken, room)

    stopped = search(0, 0, room=dict(left))
    return Packing(free + best, upper if stopped else free + best)
