"""The object model: version normalization, both KEP-5517 shapes, tolerant parsing, clear errors."""

from __future__ import annotations

import pytest

from kubectl_dra.errors import InputError
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.registry import invalid_field_problems, parse_object
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.resource import ResourceSlice
from kubectl_dra.model.scheduling import PodGroup
from kubectl_dra.quantity import Quantity


def claim(api_version: str, request: dict, **status) -> dict:
    return {"apiVersion": api_version, "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ml", "uid": "u1"},
            "spec": {"devices": {"requests": [request]}}, "status": status}


@pytest.mark.parametrize("api_version,request_", [
    ("resource.k8s.io/v1beta1", {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2,
                                 "allocationMode": "ExactCount"}),
    ("resource.k8s.io/v1beta2", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                                            "allocationMode": "ExactCount"}}),
    ("resource.k8s.io/v1", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                                       "allocationMode": "ExactCount"}}),
])
def test_claim_requests_normalize_to_v1(api_version, request_):
    obj = parse_object(claim(api_version, request_))
    assert isinstance(obj, ResourceClaim)
    req = obj.spec.devices.requests[0]
    assert req.exactly is not None
    assert (req.name, req.exactly.device_class_name, req.exactly.count) == ("gpu", "gpu.example.com", 2)
    assert obj.version == api_version.split("/")[1]


def test_v1beta1_first_available_is_not_wrapped():
    obj = parse_object(claim("resource.k8s.io/v1beta1", {"name": "any", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com"}, {"name": "cpus", "deviceClassName": "dra.cpu"}]}))
    req = obj.spec.devices.requests[0]
    assert req.exactly is None
    assert [s.name for s in req.first_available] == ["big", "cpus"]
    assert req.first_available[1].device_class_name == "dra.cpu"


def test_v1beta1_device_basic_and_bare_capacity_are_flattened():
    raw = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "dra.cpu", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                    "nodeName": "n1", "devices": [{"name": "numa0", "basic": {
                        "attributes": {"numaNodeID": {"int": 0}},
                        "capacity": {"dra.cpu/cpu": "32", "memory": {"value": "64Gi"}},
                        "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "dra.cpu/cpu"}}}}]}}
    obj = parse_object(raw)
    assert isinstance(obj, ResourceSlice)
    dev = obj.spec.devices[0]
    assert dev.attributes["numaNodeID"].value == 0
    assert dev.capacity["dra.cpu/cpu"].value == Quantity.parse("32")
    assert str(dev.capacity["memory"].value) == "64Gi"
    assert dev.node_allocatable_resource_mappings["cpu"].capacity_key == "dra.cpu/cpu"
    assert dev.has_node_allocatable
    assert obj.raw is raw  # passthrough for -o yaml keeps the original


def test_v1_device_node_allocatable_resources():
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "gpu.example.com", "pool": {"name": "n1"}, "devices": [{"name": "gpu-0",
                    "capacity": {"memory": {"value": "80Gi"}},
                    "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "1Gi", "perContainer": "512Mi"}},
                                                 "cpu": {"mapping": {"deviceMultiplier": "2"}}}}]}}
    dev = parse_object(raw).spec.devices[0]
    assert str(dev.node_allocatable_resources["memory"].overhead.per_container) == "512Mi"
    assert dev.node_allocatable_resources["memory"].mapping is None
    assert dev.node_allocatable_resources["cpu"].mapping.device_multiplier == Quantity.parse("2")


def pod_with_status(entry: dict) -> Pod:
    return parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml", "uid": "p1"},
                         "spec": {"containers": [{"name": "c"}]},
                         "status": {"nodeAllocatableResourceClaimStatuses": [entry]}})


def test_pod_status_137_shape():
    pod = pod_with_status({"resourceClaimName": "p-cpu-x1", "containers": ["c"],
                           "mapping": [{"name": "cpu", "quantity": "10"}],
                           "overhead": [{"name": "memory", "perPod": "1Gi", "perContainer": "512Mi"}]})
    entry = pod.status.node_allocatable_resource_claim_statuses[0]
    assert entry.generation == "v1.37"
    assert entry.mapping[0].quantity == Quantity.parse("10")
    assert str(entry.overhead[0].per_pod) == "1Gi"


def test_pod_status_136_shape():
    entry = pod_with_status({"resourceClaimName": "x", "containers": ["c"], "resources": {"cpu": "4"}}) \
        .status.node_allocatable_resource_claim_statuses[0]
    assert entry.generation == "v1.36"
    assert entry.resources["cpu"] == Quantity.parse("4")
    assert entry.mapping == []


def test_pod_claims_sidecars_and_scheduling_group():
    pod = parse_object({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "w-0", "namespace": "ml", "uid": "p1"},
                        "spec": {"schedulingGroup": {"podGroupName": "trainer"},
                                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"},
                                                    {"name": "shared", "resourceClaimName": "nic"}],
                                 "initContainers": [{"name": "init"},
                                                    {"name": "proxy", "restartPolicy": "Always",
                                                     "resources": {"claims": [{"name": "shared"}]}}],
                                 "containers": [{"name": "main", "resources": {
                                     "requests": {"cpu": 1, "memory": "1Gi"}, "limits": {"cpu": 1.5},
                                     "claims": [{"name": "gpu"}, {"name": "shared"}]}}]},
                        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "w-0-gpu-abcde"}],
                                   "containerStatuses": [{"name": "main", "containerID": "containerd://abc"}]}})
    assert pod.pod_group_name == "trainer"
    assert [c.name for c in pod.sidecars()] == ["proxy"]
    assert pod.referenced_claim_names() == {"gpu": "w-0-gpu-abcde", "shared": "nic"}
    assert pod.containers_using("shared") == ["proxy", "main"]
    main = pod.spec.containers[0]
    assert main.resources.requests["cpu"] == Quantity.parse("1")  # YAML int
    assert str(main.resources.limits["cpu"]) == "1500m"  # YAML float
    assert pod.container_status("main").runtime_and_id == ("containerd", "abc")


def test_unmade_template_claim_resolves_to_none():
    pod = parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
                        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}})
    assert pod.referenced_claim_names() == {"gpu": None}


@pytest.mark.parametrize("version", ["v1beta1", "v1alpha3", "v1alpha2"])
def test_podgroup_versions(version):
    pg = parse_object({"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
                       "metadata": {"name": "trainer", "namespace": "ml"},
                       "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}]},
                       "status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "trainer-gpus-x"}]}})
    assert isinstance(pg, PodGroup)
    assert pg.claim_object_name(pg.spec.resource_claims[0]) == "trainer-gpus-x"


def test_unknown_fields_are_ignored_and_unknown_kinds_skipped():
    obj = parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "futureField": 1},
                        "spec": {"containers": [{"name": "c", "newThing": {"x": 1}}]}, "newTopLevel": True})
    assert obj.name == "p"
    assert parse_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) is None
    assert parse_object({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}}) is None


def test_unknown_version_of_known_kind_is_an_error_naming_it():
    with pytest.raises(InputError, match=r"ResourceClaim ml/c: unknown API version resource.k8s.io/v2 "
                                         r"\(this tool reads resource.k8s.io/v1, resource.k8s.io/v1beta2"):
        parse_object(claim("resource.k8s.io/v2", {"name": "gpu"}))


def test_invalid_quantity_keeps_the_object_and_names_the_field():
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "12XB", "cpu": "1"}}}]}}
    obj = parse_object(raw)
    assert obj.uid == "u1" and obj.spec.containers[0].name == "c"
    assert obj.spec.containers[0].resources.limits == {"cpu": Quantity.parse("1")}  # the bad value is dropped
    assert [f.path for f in obj.invalid_fields] == ["spec.containers[0].resources.limits.memory"]
    assert '"12XB"' in obj.invalid_fields[0].reason
    assert obj.invalid_under("spec.containers[0]") == ["spec.containers[0].resources.limits.memory"]
    assert obj.invalid_under("spec.containers[1]", "status") == []
    [line] = invalid_field_problems(obj)
    assert line.startswith("Pod d/p: spec.containers[0].resources.limits.memory: invalid quantity \"12XB\"")
    assert raw["spec"]["containers"][0]["resources"]["limits"]["memory"] == "12XB"  # the input is not edited


def test_repairs_reach_the_enclosing_item_and_keep_indices_apart():
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
           "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "x"}}}, {"image": "no-name"},
                                   {"name": "c", "resources": {"requests": {"cpu": "y"}}}]}}
    obj = parse_object(raw)
    assert [c.name for c in obj.spec.containers] == ["a", "c"]  # the nameless container is dropped whole
    assert [f.path for f in obj.invalid_fields] == ["spec.containers[0].resources.requests.cpu",
                                                    "spec.containers[1].name",
                                                    "spec.containers[2].resources.requests.cpu"]


def test_an_object_without_a_name_is_not_kept():
    with pytest.raises(InputError, match=r"metadata.name"):
        parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "x"}})
    with pytest.raises(InputError, match=r"metadata.name"):
        parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 7}})


def test_v1beta1_device_errors_point_into_the_flattened_device():
    raw = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "d", "pool": {"name": "p"}, "devices": [
               {"name": "g0", "basic": {"capacity": {"memory": "8x"}}},
               {"name": "g1", "basic": {"capacity": {"memory": "80Gi"}}}]}}
    obj = parse_object(raw)
    g0, g1 = obj.spec.devices
    assert (g0.name, g0.capacity, g1.capacity["memory"].value) == ("g0", {}, Quantity.parse("80Gi"))
    assert obj.device_invalid(g0) == ["spec.devices[0].capacity.memory.value"] and obj.device_invalid(g1) == []


def test_missing_kind_is_an_error():
    with pytest.raises(InputError, match="without apiVersion and kind"):
        parse_object({"metadata": {"name": "x"}})


def test_claim_state_column():
    base = claim("resource.k8s.io/v1", {"name": "g"})
    assert parse_object(base).state() == ["pending"]
    allocated = claim("resource.k8s.io/v1", {"name": "g"},
                      allocation={"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": [
                          {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
                      reservedFor=[{"resource": "pods", "name": "p", "uid": "x"}])
    obj = parse_object(allocated)
    assert obj.state() == ["allocated", "reserved"]
    assert obj.node_name == "n1"
    deleted = {**allocated, "metadata": {**allocated["metadata"], "deletionTimestamp": "2026-11-20T10:00:00Z"}}
    assert parse_object(deleted).state() == ["deleted", "allocated", "reserved"]
    gone = {**base, "metadata": {**base["metadata"], "deletionTimestamp": "2026-11-20T10:00:00Z"}}
    assert parse_object(gone).state() == ["deleted"]


# --------------------------------------------------------------------------- nonsense quantities
# What the v1.37.2 API server says about each (tests/cluster/test_quantity_validation.py asks it).

def pod_with(resources: dict, overhead: dict | None = None) -> dict:
    spec = {"containers": [{"name": "main", "resources": resources}]}
    if overhead:
        spec["overhead"] = overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml", "uid": "u"}, "spec": spec}


QUANTITY_CASES = [  # resources, {invalid path: reason} (empty: valid)
    ({"requests": {"cpu": "-1"}},
     {"spec.containers[0].resources.requests.cpu": 'Invalid value: "-1": must be greater than or equal to 0'}),
    ({"limits": {"memory": "-1Gi"}},
     {"spec.containers[0].resources.limits.memory": 'Invalid value: "-1Gi": must be greater than or equal to 0'}),
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
     {"spec.containers[0].resources.requests.cpu": 'Invalid value: "2": must be less than or equal to cpu limit of 1'}),
    ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
     {"spec.containers[0].resources.requests.example.com/gpu":
      'Invalid value: "1": must be equal to example.com/gpu limit of 2'}),
    ({"requests": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}, "limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}},
     {"spec.containers[0].resources.requests.hugepages-2Mi":
      'Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'}),
    ({"requests": {"memory": "1e100"}},  # the server stores it; Value() overflows int64 everywhere after
     {"spec.containers[0].resources.requests.memory": 'Invalid value: "10e99": more than the scheduler and kubelet '
                                                       "can count (int64 bytes): every value computed from it overflows"}),
    ({"requests": {"cpu": "1e16"}},  # 10^19 millicores
     {"spec.containers[0].resources.requests.cpu": 'Invalid value: "10e15": more than the scheduler and kubelet '
                                                    "can count (int64 millicores): every value computed from it overflows"}),
    ({"requests": {"cpu": "9e15"}}, {}),  # 9*10^18 millicores still fits
    ({"requests": {"memory": "100Ei"}}, {}),  # BinarySI is capped at 2^63-1 by the parser, as upstream
    ({"requests": {"cpu": "1", "kubernetes.io/batch-cpu": "1"}, "limits": {"kubernetes.io/batch-cpu": "2"}}, {}),
    ({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, {}),
]


@pytest.mark.parametrize("resources,invalid", QUANTITY_CASES)
def test_nonsense_quantities_are_invalid_fields_named_like_the_api_server(resources, invalid):
    pod = parse_object(pod_with(resources))
    assert dict(pod.invalid_fields) == invalid
    for path in invalid:  # only the offending value is dropped
        kind, name = path.split(".resources.")[1].split(".", 1)
        assert name not in getattr(pod.spec.containers[0].resources, kind)


def test_negative_overhead_and_node_allocatable_are_invalid():
    pod = parse_object(pod_with({}, overhead={"memory": "-1"}))
    assert pod.invalid_fields[0].path == "spec.overhead.memory"
    node = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                         "status": {"allocatable": {"cpu": "-2", "memory": "1Gi"}}})
    assert [f.path for f in node.invalid_fields] == ["status.allocatable.cpu"]
    assert str(node.status.allocatable["memory"]) == "1Gi"
