"""Our api.proto against the PodResources v1 wire contract as documented (service name, methods,
message field numbers and types): a wrong number would make both ends of our own tests agree and
a real kubelet disagree."""

from __future__ import annotations

import pytest

from node_agent.podresources import api_pb2

# message -> field -> (number, label repeated?), from the kubelet's v1 API (docs/kubernetes/node-state.md §12)
CONTRACT = {
    "ListPodResourcesResponse": {"pod_resources": (1, True)},
    "PodResources": {"name": (1, False), "namespace": (2, False), "containers": (3, True), "cpu_ids": (4, True),
                     "memory": (5, True)},
    "ContainerResources": {"name": (1, False), "devices": (2, True), "cpu_ids": (3, True), "memory": (4, True),
                           "dynamic_resources": (5, True)},
    "DynamicResource": {"claim_name": (2, False), "claim_namespace": (3, False), "claim_resources": (4, True)},
    "ClaimResource": {"cdi_devices": (1, True), "driver_name": (2, False), "pool_name": (3, False),
                      "device_name": (4, False), "share_id": (5, False)},
    "CDIDevice": {"name": (1, False)},
    "GetPodResourcesRequest": {"pod_name": (1, False), "pod_namespace": (2, False)},
    "GetPodResourcesResponse": {"pod_resources": (1, False)},
    "AllocatableResourcesResponse": {"devices": (1, True), "cpu_ids": (2, True), "memory": (3, True)},
}


@pytest.mark.parametrize("message", sorted(CONTRACT))
def test_field_numbers_match_the_kubelets(message):
    descriptor = api_pb2.DESCRIPTOR.message_types_by_name[message]
    got = {f.name: (f.number, f.is_repeated) for f in descriptor.fields}
    assert got == CONTRACT[message]


def test_service_and_package():
    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert service.full_name == "v1.PodResourcesLister"
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]
    share = api_pb2.DESCRIPTOR.message_types_by_name["ClaimResource"].fields_by_name["share_id"]
    assert share.has_presence  # optional: "no share" differs from ""
