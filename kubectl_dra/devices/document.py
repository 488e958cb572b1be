"""The result document of ``devices/explain.py``: the model only, built there."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import Field

from kubectl_dra.document import Document, Finding, part
from kubectl_dra.versions import Versions

DeviceState = Literal["Free", "Allocated", "Shared", "Tainted", "CountersUsed", "CapacityUsed", "Outdated",
                      "PoolIncomplete", "PoolInvalid", "Unreachable", "Unknown"]


@part
class CounterUse:
    """One shared counter of a partitionable pool: what the allocations take of it."""

    counter_set: str
    counter: str
    total: str
    consumed: str
    remaining: str  # negative: overdrawn (the driver shrank it under what is allocated)


@part
class ShapeFit:
    """A device shape (a partition type) and how many more devices of it fit at once now."""

    shape: str  # the partition type attribute's value, or what the devices consume
    attribute: str | None = None  # the attribute the shape comes from, None: the consumption itself
    devices: int = 0  # devices of this shape the pool has (the class accepts)
    fit: int | None = None  # more that could be allocated together now; None: not known (see ``unknown``)
    unknown: str | None = None


@part
class CapacityUse:
    """One consumable capacity, summed over the pool's shareable devices."""

    name: str
    total: str
    consumed: str
    remaining: str


@part
class Holder:
    """A claim that holds a device, and who uses it."""

    claim: str  # namespace/name
    pods: list[str] = dataclasses.field(default_factory=list)  # namespace/name, from status.reservedFor
    pod_groups: list[str] = dataclasses.field(default_factory=list)
    admin_access: bool = False  # takes nothing from others
    share_id: Annotated[str | None, Field(alias="shareID")] = None  # as the API spells it
    consumed: dict[str, str] = dataclasses.field(default_factory=dict)
    deleting: bool = False  # the claim is being deleted: it holds the device until its finalizer goes


@part
class DeviceRow:
    """One device: its state for a new request, its key attributes, taints, health and holders."""

    device: str  # driver/pool/device
    node: str  # the node it is on, or <all nodes> / <N nodes> for a pool several nodes reach
    state: DeviceState = "Free"
    reason: str = ""  # why it is not free
    attributes: dict[str, str] = dataclasses.field(default_factory=dict)
    capacity: dict[str, str] = dataclasses.field(default_factory=dict)
    taints: list[str] = dataclasses.field(default_factory=list)  # key=value:effect (rule/NAME when a rule's)
    health: str | None = None  # what a kubelet last reported in a pod's status; None: not reported
    holders: list[Holder] = dataclasses.field(default_factory=list)


@part
class PoolRow:
    """One node x driver x pool: its devices counted as the scheduler counts them."""

    node: str  # the node, or <all nodes> / <N nodes> (``nodes``) for a pool several nodes reach
    driver: str
    pool: str
    generation: int = 0
    total: int = 0  # devices of the pool's current generation (that the class accepts)
    allocated: int = 0  # held by a claim (whole, or shared to its capacity)
    free: int | None = None  # a request could take this many together now; None: not known (``unknown``)
    available: int | None = None  # free one at a time (more than ``free`` when shared counters overlap)
    tainted: int = 0  # free but for a NoSchedule or NoExecute taint
    blocked: int = 0  # not held, but shared counters or capacity are used up, or the pool is not usable
    admin: int = 0  # admin-access allocations (they take nothing from others)
    outdated: int = 0  # devices in slices of an older generation (the scheduler ignores them)
    unhealthy: int | None = None  # devices a kubelet reports Unhealthy; None: pods not read
    nodes: list[str] = dataclasses.field(default_factory=list)  # a shared pool: the nodes it reaches
    counters: list[CounterUse] = dataclasses.field(default_factory=list)
    shapes: list[ShapeFit] = dataclasses.field(default_factory=list)
    capacity: list[CapacityUse] = dataclasses.field(default_factory=list)
    fully_free_shareable: int = 0  # shareable devices nothing consumes
    partly_free_shareable: int = 0
    state: str = ""  # "" or PoolIncomplete / PoolInvalid: why none of it is free
    unknown: str | None = None  # why ``free`` is not known
    devices: list[DeviceRow] = dataclasses.field(default_factory=list)  # with --devices / -o wide


class DeviceAvailability(Document):
    kind: str = "DeviceAvailability"
    device_class: str | None = None  # --class: only devices its selectors accept are counted
    pools: list[PoolRow] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
