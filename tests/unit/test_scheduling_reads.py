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


def test_a_pod_asking_huge_pages_reads_the_device_classes_only():
    """NodeResourcesFit asks whether a DeviceClass provides a scalar resource a node does not
    advertise (shouldDelegateResourceToDRA): without the classes that node is undetermined."""
    kinds = _kinds(_pod({"memory": "1Gi", "hugepages-2Mi": "64Mi"}, limits={"hugepages-2Mi": "64Mi"}))
    assert "DeviceClass" in kinds and "ResourceSlice" not in kinds


@pytest.mark.parametrize("name", ["example.com/widget", "deviceclass.resource.kubernetes.io/gpu"])
def test_a_pod_asking_an_extended_resource_reads_what_a_claim_needs_none_required(name):
    """A DeviceClass may provide it through DRA (KEP-5004): DynamicResources then allocates the
    scheduler's own claim, which needs the slices, classes, claims and rules; a cluster without DRA
    (or a user who may not list them) still gets every other filter."""
    reads = scheduling_reads(_pod({"cpu": "1", name: "1"}, limits={name: "1"}))
    dra = {r.model.KIND: r.required for r in reads if r.model.KIND not in ("Node", "Pod", "Namespace")}
    assert dra == {"ResourceSlice": False, "DeviceClass": False, "DeviceTaintRule": False, "ResourceClaim": False,
                   "ResourceClaimTemplate": False}


def test_a_plain_pod_reads_no_device_classes():
    assert "DeviceClass" not in _kinds(_pod({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}))


def test_a_pod_with_claims_reads_the_classes_once():
    assert _kinds(_pod({"example.com/widget": "1"}, limits={"example.com/widget": "1"}, claims=True)).count(
        "DeviceClass") == 1
