"""The result document of ``scheduling/explain.py``: the model only, built there."""

from __future__ import annotations

import dataclasses

from pydantic import Field

from kubectl_dra.document import PART_CONFIG, Part, part
from kubectl_dra.versions import MODELLED


@dataclasses.dataclass(slots=True)
class Evidence:
    """The numbers or facts behind one reason, for a person (never part of the scheduler's words).

    For a resource: what the pod asks for (``requested``, of which ``dra`` came from its claims'
    node-allocatable mappings and ``overhead`` from the RuntimeClass), the node's ``allocatable``
    and what the pods already bound there ``used``; all in Kubernetes quantity notation. For
    anything else, ``detail`` says which taint, label, port, term or device it was.
    """

    reason: str
    resource: str | None = None
    requested: str | None = None
    dra: str | None = None
    overhead: str | None = None
    allocatable: str | None = None
    used: str | None = None
    detail: str | None = None


Evidence.__pydantic_config__ = PART_CONFIG  # as a part: made by the filters positionally, serialized in camelCase


@part
class PluginReasons:
    plugin: str
    reasons: list[str] = dataclasses.field(default_factory=list)


@part
class NotEvaluated:
    plugin: str
    why: str


@part
class NodeScheduling:
    node: str
    fits: bool | None  # None: this tool cannot tell (see undetermined)
    plugin: str | None = None  # the filter that refused it, as the scheduler reports it
    reasons: list[str] = dataclasses.field(default_factory=list)  # the scheduler's words
    evidence: list[Evidence] = dataclasses.field(default_factory=list)
    also: list[PluginReasons] = dataclasses.field(default_factory=list)  # later filters that refuse it too
    undetermined: list[NotEvaluated] = dataclasses.field(default_factory=list)


class Scheduling(Part):
    message: str | None = None  # the scheduler's FitError message now, up to " preemption:"; None: it fits
    message_known: bool = True  # False: some node cannot be decided, so no message is claimed
    feasible_nodes: list[str] = Field(default_factory=list)
    nodes_checked: int = 0
    nodes: list[NodeScheduling] = Field(default_factory=list)
    not_evaluated: list[NotEvaluated] = Field(default_factory=list)
    profile: str = ""
    release: str = MODELLED  # the kube-scheduler release whose filters and words these are
    nominated_node: str | None = None
    recorded: str | None = None  # the PodScheduled message the scheduler last wrote on the pod
    waiting: list[NotEvaluated] = Field(default_factory=list)  # why the scheduler does not try the pod yet
    error: str | None = None  # the scheduler would fail with this error instead
    possible_error: str | None = None  # the scheduler may fail with this error instead (a search's timeout)
    # feasible nodes where binding fails after the filters (PreBind's error there)
    bind_errors: dict[str, str] = Field(default_factory=dict)
    next_step: str | None = None

    def binds_nowhere(self) -> bool:
        """The filters let the pod through, but binding fails on every node they let it through to."""
        return bool(self.feasible_nodes) and set(self.feasible_nodes) <= set(self.bind_errors)
