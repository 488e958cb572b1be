"""The parts of a claim's story (the claim and each allocated device), shared by the explanation
and the findings computed from it."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import Field

from kubectl_dra.document import part


@part
class ClaimRef:
    namespace: str
    name: str
    uid: str
    state: list[str]
    node: str | None = None
    finalizers: list[str] = dataclasses.field(default_factory=list)
    deletion_timestamp: str | None = None


@part
class DeviceView:
    request: str
    driver: str
    pool: str
    device: str
    share_id: Annotated[str | None, Field(alias="shareID")] = None
    admin_access: bool | None = None
    consumed_capacity: dict[str, str] | None = None
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)
    capacity: dict[str, str] = dataclasses.field(default_factory=dict)
    node_allocatable: dict[str, str] = dataclasses.field(default_factory=dict)
    node_allocatable_overhead: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    resource_slice: str | None = None
    found: bool = True
    device_class_name: str | None = None  # from the request (or firstAvailable subrequest) that chose it
    subrequest: str | None = None
    device_class_found: bool | None = None  # None when DeviceClasses were not read
    conditions: list[dict[str, str]] = dataclasses.field(default_factory=list)
    taints: list[dict[str, str]] = dataclasses.field(default_factory=list)  # driver's and DeviceTaintRules' (source)
    network_data: dict[str, Any] | None = None
    invalid_fields: list[str] = dataclasses.field(default_factory=list)  # of the device in its slice: what they feed is unknown
