"""The parts of a claim's story (the claim and each allocated device), shared by the explanation
and the findings computed from it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubectl_dra.document import Part


class ClaimRef(Part):
    namespace: str
    name: str
    uid: str
    state: list[str]
    node: str | None = None
    finalizers: list[str] = Field(default_factory=list)
    deletion_timestamp: str | None = None


class DeviceView(Part):
    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = Field(default=None, alias="shareID")
    admin_access: bool | None = None
    consumed_capacity: dict[str, str] | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    capacity: dict[str, str] = Field(default_factory=dict)
    node_allocatable: dict[str, str] = Field(default_factory=dict)
    node_allocatable_overhead: dict[str, dict[str, str]] = Field(default_factory=dict)
    resource_slice: str | None = None
    found: bool = True
    device_class_name: str | None = None  # from the request (or firstAvailable subrequest) that chose it
    subrequest: str | None = None
    device_class_found: bool | None = None  # None when DeviceClasses were not read
    conditions: list[dict[str, str]] = Field(default_factory=list)
    network_data: dict[str, Any] | None = None
    invalid_fields: list[str] = Field(default_factory=list)  # of the device in its slice: what they feed is unknown
