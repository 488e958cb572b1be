"""How long one node's allocation search may run: the scheduler's own bound, and ours.

kube-scheduler stops a node's allocation after the DynamicResources ``filterTimeout`` (10 s unless
configured; 0 turns it off; the DRASchedulerFilterTimeout gate, beta and on since 1.34) and then fails
the whole scheduling attempt with ``node <name>: timed out trying to allocate devices``
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go lines 1033-1073 at v1.37.2,
docs/kubernetes/dra-apis.md §8). The allocator itself prunes nothing but the
result-size limit, so that is the bound this tool stops its search at as well; ``total`` keeps one
command's searches over many nodes bounded too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kubectl_dra.duration import parse_ns

DEFAULT_FILTER_TIMEOUT = 10.0  # DynamicResourcesFilterTimeoutDefault (kube-scheduler config v1, v1.37.2)
DEFAULT_SOURCE = "the scheduler's default filterTimeout"
UNBOUNDED_LIMIT = DEFAULT_FILTER_TIMEOUT  # what this tool still stops at when the scheduler has no bound
QUICK = 0.1  # seconds: a node's search shorter than this never counts toward a command's total
SURE = 0.25  # a search this tool ends within this share of filterTimeout is taken to end in the scheduler too


def timeout_words(node: str) -> str:
    """The scheduler's error when a node's allocation runs past filterTimeout (dynamicresources.go:1073)."""
    return f"node {node}: timed out trying to allocate devices"


class BoundError(ValueError):
    """A ``filterTimeout`` the scheduler would refuse to start with."""


def filter_timeout(args: dict, where: str | None) -> tuple[float, str]:
    """(seconds, where it came from) of a DynamicResourcesArgs ``filterTimeout`` (0: no bound);
    ``where``: the configuration file's profile, None for the default profile."""
    value = args.get("filterTimeout") if isinstance(args, dict) else None
    if value is None:
        return DEFAULT_FILTER_TIMEOUT, DEFAULT_SOURCE if where is None else f"the default filterTimeout of {where}"
    try:
        nanoseconds = parse_ns(value) if isinstance(value, str) else None
    except ValueError:
        nanoseconds = None
    if nanoseconds is None:
        raise BoundError(f'{where}: DynamicResources filterTimeout "{value}" is not a duration such as 10s')
    if nanoseconds < 0:  # validation_pluginargs.go: "must be zero or positive"
        raise BoundError(f'{where}: DynamicResources filterTimeout "{value}": must be zero or positive')
    return nanoseconds / 1e9, f"filterTimeout {value} of {where}"


@dataclass
class SearchBound:
    """The scheduler's per-node bound (``filter_timeout``, 0 = none) and what is left of this
    command's own total, shared by every node it searches."""

    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    source: str = DEFAULT_SOURCE
    total: float | None = None  # three nodes' worth unless given
    own_limit: float = UNBOUNDED_LIMIT  # where this tool stops when the scheduler has no bound
    _spent: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.total is None:
            self.total = 3 * self.per_node

    @property
    def per_node(self) -> float:
        """What one node's search may take here: the scheduler's bound, or ours when it has none."""
        return self.filter_timeout if self.filter_timeout > 0 else self.own_limit

    def deadline(self) -> tuple[float, bool]:
        """(monotonic deadline for the next node's search, whether the total cut it short). Once the
        total is spent a search still gets QUICK: the quick ones, which never count, all end."""
        left = max(0.0, self.total - self._spent)
        return time.monotonic() + min(self.per_node, max(QUICK, left)), max(QUICK, left) < self.per_node

    def spend(self, seconds: float) -> None:
        """Only searches of QUICK or more count toward the total: many nodes' quick searches are the
        ordinary cost of a big cluster (scripts/bench), not what the total is for."""
        if seconds >= QUICK:
            self._spent += seconds
