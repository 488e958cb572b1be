"""What one allocated device contributes to node allocatable (KEP-5517, both alpha shapes)."""

from __future__ import annotations

from kubectl_dra.model.claim import DeviceRequestAllocationResult
from kubectl_dra.model.resource import Device
from kubectl_dra.quantity import Quantity


_ONE = Quantity.parse("1")


def mapped_amounts(device: Device, result: DeviceRequestAllocationResult) -> dict[str, Quantity]:
    """The ``mapping`` part for one device result, per node resource.

    1.37: ``capacityKey`` x ``capacityMultiplier`` reads the result's ``consumedCapacity`` (a key
    missing there contributes nothing; a nil map is a scheduler error, reported elsewhere);
    ``deviceMultiplier`` counts once per device result.
    1.36: ``allocationMultiplier`` (default 1) times the consumed capacity when ``capacityKey``
    is set, else times one device.
    """
    amounts: dict[str, Quantity] = {}
    consumed = result.consumed_capacity or {}
    for resource, entry in device.node_allocatable_resources.items():
        mapping = entry.mapping
        if mapping is None:
            continue
        if mapping.device_multiplier is not None:
            amounts[resource] = mapping.device_multiplier
        elif mapping.capacity_key and mapping.capacity_key in consumed:
            multiplier = mapping.capacity_multiplier.as_fraction() if mapping.capacity_multiplier else 1
            amounts[resource] = consumed[mapping.capacity_key] * multiplier
    for resource, old in device.node_allocatable_resource_mappings.items():
        multiplier = old.allocation_multiplier.as_fraction() if old.allocation_multiplier else 1
        if old.capacity_key:
            if old.capacity_key in consumed:
                amounts[resource] = consumed[old.capacity_key] * multiplier
        else:
            amounts[resource] = old.allocation_multiplier or _ONE
    return amounts
