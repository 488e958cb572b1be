"""What the scheduling explanation reads: enough for every filter to decide."""

from __future__ import annotations

import pytest

from kubectl_dra.model.registry import parse_object
from kubectl_dra.scheduling.reads import scheduling_reads


def _pod(requests: dict, *, limits: dict | None = None, claims: bool = False, pod_level: dict | None = None) -> object:
    container = {"name": "c", "image": "x", "resources": {"requests": requests, "limits": limits or {}}}
    spec: dict = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = [{"name": "d", "resourceClaimTemplateName": "t"}]
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    return parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


def _kinds(pod) -> list[str]:
    return [r.model.KIND for r in scheduling_reads(pod)]


@pytest.mark.parametrize("requests,limits", [
    ({"cpu": "1", "example.com/widget": "1"}, {"example.com/widget": "1"}),  # an extended resource
    ({"memory": "1Gi", "hugepages-2Mi": "64Mi"}, {"hugepages-2Mi": "64Mi"}),  # huge pages
])
def test_a_pod_asking_a_scalar_resource_reads_the_device_classes(requests, limits):
    """NodeResourcesFit asks whether a DeviceClass provides a scalar resource a node does not
    advertise (shouldDelegateResourceToDRA): without the classes that node is undetermined."""
    kinds = _kinds(_pod(requests, limits=limits))
    assert "DeviceClass" in kinds and "ResourceSlice" not in kinds


def test_a_plain_pod_reads_no_device_classes():
    assert "DeviceClass" not in _kinds(_pod({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}))


def test_a_pod_with_claims_reads_the_classes_once():
    assert _kinds(_pod({"example.com/widget": "1"}, limits={"example.com/widget": "1"}, claims=True)).count(
        "DeviceClass") == 1
