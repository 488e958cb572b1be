"""The result document of ``taints/explain.py``: the model only, built there."""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field

from kubectl_dra.document import Document, Finding, part
from kubectl_dra.versions import Versions

Outcome = Literal["Evicted", "EvictionPending", "WouldEvict", "Tolerated", "BlocksNewAllocations", "Unknown"]


@part
class TaintView:
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None
    source: str = "slice"  # "slice" or "rule/<name>"


@part
class ConsumerOutcome:
    claim: str  # namespace/name
    pods: list[str] = dataclasses.field(default_factory=list)  # namespace/name
    outcome: Outcome = "Tolerated"
    evict_at: str | None = None  # when the controller deletes the pods (NoExecute)
    unknown: str | None = None  # outcome Unknown: the field that did not validate


@part
class TaintedDevice:
    device: str  # driver/pool/device
    node: str | None = None
    taints: list[TaintView] = dataclasses.field(default_factory=list)
    consumers: list[ConsumerOutcome] = dataclasses.field(default_factory=list)
    published: bool = True  # False: only an allocation names it (a rule still taints it)
    unknown: str | None = None  # a taint of its slice did not validate: which field


class TaintExplanation(Document):
    kind: str = "TaintExplanation"
    dry_run: bool = False
    rule: str | None = None  # the rule evaluated with --dry-run
    devices: list[TaintedDevice] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    versions: Versions | None = None  # the releases the answer was modelled on and found (versions.py)
