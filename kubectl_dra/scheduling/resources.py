"""What a pod counts for on a node, in the scheduler's units (``framework.Resource``).

``to_resource`` is ``NewResource``: cpu as ``MilliValue``, everything else as ``Value()``
(rounded up), the pod count under ``pods``. ``scheduler_requests`` is ``CalculateResource``
for a pod in the cache: ``PodRequests`` with the recorded node-allocatable claim statuses
(KEP-5517), pod-level resources and overhead (allocatable/requests.py holds the aggregation).
"""

from __future__ import annotations

from typing import Mapping

from kubectl_dra.quantity import Quantity

Resource = dict[str, int]  # resource name -> amount in the scheduler's unit (cpu: milli)


def to_resource(resources: Mapping[str, Quantity]) -> Resource:
    return {name: q.milli_value() if name == "cpu" else q.value() for name, q in resources.items()}


def scheduler_requests(pod) -> Resource:
    from kubectl_dra.allocatable.entries import from_status
    from kubectl_dra.allocatable.requests import pod_requests

    entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
    return to_resource(pod_requests(pod, entries))
