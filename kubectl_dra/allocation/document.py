"""The allocation explainer's result (``Allocation``, docs/contracts.md §3.9), apart from the allocator: the
claim and pod explanations carry it without importing the allocator, CEL or the pool gathering."""

from __future__ import annotations

import dataclasses

from pydantic import Field

from kubectl_dra.document import Part, part


@part
class RejectedDevice:
    device: str
    reason: str
    message: str = ""


@part
class RequestView:
    claim: str
    request: str
    wanted: str = "1"
    candidates: list[str] = dataclasses.field(default_factory=list)
    rejected: list[RejectedDevice] = dataclasses.field(default_factory=list)


@part
class ResultView:
    claim: str
    request: str
    driver: str
    pool: str
    device: str


@part
class NodeAllocation:
    node: str
    feasible: bool
    results: list[ResultView] = dataclasses.field(default_factory=list)
    requests: list[RequestView] = dataclasses.field(default_factory=list)
    error: str | None = None  # the scheduler would report an Error on this node (not "unschedulable")
    undetermined: str | None = None  # kubectl-dra cannot tell for this node (why): no verdict
    message: str | None = None  # why not, in one line
    possible_error: str | None = None  # the Error the scheduler may report here instead (a timeout, a cost limit)
    timing: str | None = None  # how long the search ran (or where it was stopped), when that matters


@part
class ProposalView:
    """A node Karpenter could launch (NodePool x instance type) with the ResourceSlices the NodeOverlay
    templates predict (a proposal, not Karpenter behaviour): would the claims fit on it?"""

    node_pool: str
    instance_type: str
    feasible: bool
    results: list[ResultView] = dataclasses.field(default_factory=list)
    message: str | None = None
    proposal: bool = True


@part
class ExtendedRequestView:
    name: str
    device_class_name: str
    count: int


@part
class ExtendedMappingView:
    container_name: str
    resource_name: str
    request_name: str


@part
class ExtendedClaimView:
    """The claim the scheduler makes for the pod's extended resources that DeviceClasses provide
    (KEP-5004): its requests and the containers they serve, on a node that advertises none of the
    resources; nodes that advertise one serve it through their device plugin instead."""

    resources: dict[str, int] = dataclasses.field(default_factory=dict)  # name -> units the pod asks for
    classes: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> the DeviceClass providing it
    requests: list[ExtendedRequestView] = dataclasses.field(default_factory=list)
    mappings: list[ExtendedMappingView] = dataclasses.field(default_factory=list)
    device_plugin_nodes: list[str] = dataclasses.field(default_factory=list)  # advertise a resource (allocatable)
    existing_claim: str | None = None  # made in an earlier attempt: the scheduler deletes it and tries anew


class Allocation(Part):
    feasible_nodes: list[str] = Field(default_factory=list)
    nodes: list[NodeAllocation] = Field(default_factory=list)
    proposals: list[ProposalView] = Field(default_factory=list)  # predicted Karpenter nodes, when asked
    claims: list[str] = Field(default_factory=list)  # what was allocated together, in the scheduler's order
    nodes_checked: int = 0
    omitted_nodes: int = 0  # infeasible nodes left out of `nodes` (see --node)
    extended: ExtendedClaimView | None = None  # the scheduler's claim for extended resources (KEP-5004)
