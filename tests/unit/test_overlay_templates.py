"""PROPOSAL: ResourceSlice templates on NodeOverlays (unmerged Karpenter RFC, docs/kubernetes/nodeoverlay.md §3.2 and §6.12).

Merged per (NodePool, instance type, driver): highest weight wins, equal weight on a driver is a
conflict (the overlay is rejected atomically), different drivers merge. Predictions are compared
with what the DRA driver really published.
"""

from __future__ import annotations

import pytest
from builders import resource_slice

from kubectl_dra.model.karpenter import NodeOverlay, NodePool
from kubectl_dra.overlays.catalog import InstanceType
from kubectl_dra.overlays.explain import evaluate, slices_for_node
from kubectl_dra.overlays.templates import compare_slices, merge_templates, parse_dynamic_resources, predict_slices

IT = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
PCIE = "resource.kubernetes.io/pcieRoot"
GPU, NIC = "gpu.example.com", "nic.example.com"


def gpu_template(name="gpus", driver=GPU, devices=("gpu-0", "gpu-1"), model="L40S", wrapped=True, **spec):
    body = {"driver": driver, "devices": [{"name": d, "attributes": {"model": {"string": model}},
                                           "capacity": {"memory": {"value": "48Gi"}}} for d in devices], **spec}
    if not wrapped:
        return {"name": name, **body} if name else body
    return {"metadata": {"name": name}, "spec": body} if name else {"spec": body}


def nic_template(name="nics", **spec):
    return {"metadata": {"name": name}, "spec": {"driver": NIC, "devices": [{"name": "nic-0"}], **spec}}


def dynamic(*templates, bindings=()):
    return {"resourceSliceTemplates": list(templates), "attributeBindings": list(bindings)}


def binding(*refs, key="resourceSliceTemplate"):
    return {"attributes": [PCIE], "deviceSelectors": [{key: t, "device": d} for t, d in refs]}


def overlay(name, weight=10, dynamic_resources=None, price=None) -> NodeOverlay:
    spec = {"weight": weight, "requirements": [{"key": IT, "operator": "In", "values": ["g1"]}]}
    if dynamic_resources is not None:
        spec["dynamicResources"] = dynamic_resources
    if price is not None:
        spec["price"] = price
    return NodeOverlay.from_raw({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                                 "metadata": {"name": name}, "spec": spec})


def instance_type(zones=("z1",)) -> InstanceType:
    return InstanceType.model_validate({"name": "g1", "labels": {IT: "g1"}, "capacity": {"memory": "64Gi"},
                                        "offerings": [{"zone": z, "capacityType": "on-demand", "price": 1.0}
                                                      for z in zones]})


POOL = NodePool.model_validate({"metadata": {"name": "gpu"}, "spec": {"template": {"metadata": {"labels": {}}}}})


# -- parsing ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("template,name", [
    (gpu_template(), "gpus"),
    (gpu_template(name=None), None),  # the Go sketch has no metadata
    (gpu_template(wrapped=False), "gpus"),  # flat, without the spec wrapper
])
def test_parse_tolerates_the_draft_shapes(template, name):
    parsed = parse_dynamic_resources(dynamic(template))
    assert parsed.errors == ()
    [t] = parsed.templates
    assert (t.name, t.driver, [d.name for d in t.devices]) == (name, GPU, ["gpu-0", "gpu-1"])


@pytest.mark.parametrize("key", ["template", "resourceSliceTemplate"])
def test_binding_selector_key_spellings(key):
    parsed = parse_dynamic_resources(dynamic(gpu_template(), nic_template(),
                                             bindings=[binding(("gpus", "gpu-0"), ("nics", "nic-0"), key=key)]))
    assert parsed.errors == ()
    assert parsed.bindings[0].devices == (("gpus", "gpu-0"), ("nics", "nic-0"))


@pytest.mark.parametrize("data,error", [
    (dynamic({"spec": {"devices": []}}), "spec.driver is required"),
    (dynamic(gpu_template(nodeSelector={"nodeSelectorTerms": [{}, {}]})), "exactly one term"),
    (dynamic(gpu_template(nodeSelector={"nodeSelectorTerms": [{}]}, allNodes=True)), "mutually exclusive"),
    (dynamic(gpu_template(), bindings=[binding(("gpus", "gpu-9"), ("gpus", "gpu-0"))]),
     "no such template device gpus/gpu-9"),
    (dynamic(gpu_template(devices=[f"d{i}" for i in range(129)])), "at most 128"),
    ({"attributeBindings": []}, "resourceSliceTemplates is required"),
])
def test_parse_errors(data, error):
    assert any(error in e for e in parse_dynamic_resources(data).errors)


# -- merging ---------------------------------------------------------------------------------------------

def test_highest_weight_wins_per_driver_and_different_drivers_merge():
    merged, conflicts = merge_templates([
        ("heavy", 10, parse_dynamic_resources(dynamic(gpu_template(model="heavy")))),
        ("light", 5, parse_dynamic_resources(dynamic(gpu_template(model="light"), nic_template()))),
    ])
    assert conflicts == []
    assert {d: m.overlay for d, m in merged.items()} == {GPU: "heavy", NIC: "light"}
    assert merged[GPU].templates[0].devices[0].attributes["model"] == {"string": "heavy"}


def test_equal_weight_same_driver_conflicts_and_the_loser_contributes_nothing():
    merged, conflicts = merge_templates([
        ("a", 10, parse_dynamic_resources(dynamic(gpu_template(), nic_template()))),
        ("b", 10, parse_dynamic_resources(dynamic(gpu_template()))),
    ])
    assert conflicts == [("a", "b", GPU)]  # b sorts later, is processed first, keeps the driver
    assert {d: m.overlay for d, m in merged.items()} == {GPU: "b"}  # a's NIC template is dropped too


def test_engine_rejects_a_template_conflict_atomically():
    result = evaluate([overlay("a", dynamic_resources=dynamic(gpu_template()), price="3"),
                       overlay("b", dynamic_resources=dynamic(gpu_template(model="B")))], [POOL], [instance_type()])
    assert result.overlay("a").status == "Conflict" and result.overlay("a").conflicts_with == ["b"]
    view = result.instance_type("gpu", "g1")
    assert view.offerings[0].price == 1.0  # a's price went with it
    [conflict] = [f for f in result.findings if f.code == "OverlayConflict"]
    assert "driver gpu.example.com" in conflict.message and "proposal" in conflict.message
    assert [s["overlay"] for s in view.resource_slices] == ["b"]


def test_engine_merges_different_drivers_at_equal_weight():
    result = evaluate([overlay("a", dynamic_resources=dynamic(nic_template())),
                       overlay("b", dynamic_resources=dynamic(gpu_template()))], [POOL], [instance_type()])
    assert [o.status for o in result.overlays] == ["Ready", "Ready"]
    slices = result.instance_type("gpu", "g1").resource_slices
    assert [(s["driver"], s["overlay"], s["proposal"]) for s in slices] == [(GPU, "b", True), (NIC, "a", True)]
    assert result.overlay("a").sets == ["dynamicResources"]


# -- prediction ------------------------------------------------------------------------------------------

def _merged(*templates, bindings=()):
    merged, _ = merge_templates([("o", 1, parse_dynamic_resources(dynamic(*templates, bindings=bindings)))])
    return merged


def test_node_local_template_gets_the_node_name_and_pool():
    [spec] = predict_slices("g1", "gpu", _merged(gpu_template()), {}, node_name="node-1")
    assert spec["nodeName"] == "node-1" and spec["pool"] == {"name": "node-1", "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
    assert spec["devices"][0]["capacity"] == {"memory": {"value": "48Gi"}}
    assert (spec["proposal"], spec["overlay"], spec["template"]) == (True, "o", "gpus")


@pytest.mark.parametrize("labels,expressions,unresolved", [
    ({ZONE: "z1"}, [{"key": "rack", "operator": "In", "values": ["r1"]},
                    {"key": ZONE, "operator": "In", "values": ["z1"]}], None),
    ({}, [{"key": "rack", "operator": "In", "values": ["r1"]}], [ZONE]),
])
def test_match_label_keys_resolve_against_the_node(labels, expressions, unresolved):
    selector = {"nodeSelectorTerms": [{"matchLabelKeys": [ZONE],
                                       "matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    [spec] = predict_slices("g1", "gpu", _merged(nic_template(nodeSelector=selector)), labels, node_name="n")
    assert "nodeName" not in spec
    assert spec["nodeSelector"] == {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
    assert spec.get("unresolvedMatchLabelKeys") == unresolved


@pytest.mark.parametrize("zones,resolved", [(("z1",), True), (("z1", "z2"), False)])
def test_engine_resolves_match_label_keys_only_when_the_instance_type_pins_the_value(zones, resolved):
    selector = {"nodeSelectorTerms": [{"matchLabelKeys": [ZONE]}]}
    result = evaluate([overlay("o", dynamic_resources=dynamic(nic_template(nodeSelector=selector)))], [POOL],
                      [instance_type(zones)])
    [spec] = result.instance_type("gpu", "g1").resource_slices
    assert ("unresolvedMatchLabelKeys" not in spec) is resolved
    if resolved:
        assert spec["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"] == [
            {"key": ZONE, "operator": "In", "values": ["z1"]}]


def test_slices_for_a_real_node_use_its_name_and_labels():
    selector = {"nodeSelectorTerms": [{"matchLabelKeys": [ZONE]}]}
    overlays = [overlay("o", dynamic_resources=dynamic(gpu_template(), nic_template(nodeSelector=selector)))]
    its = [instance_type(("z1", "z2"))]  # the type alone cannot say which zone
    slices = slices_for_node(overlays, [POOL], its, nodepool="gpu", instance_type="g1", node_name="worker-1",
                             node_labels={ZONE: "z2"})
    assert [s["driver"] for s in slices] == [GPU, NIC]
    assert slices[0]["nodeName"] == "worker-1" and slices[0]["pool"]["name"] == "worker-1"
    assert slices[1]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["z2"]
    assert compare_slices(slices, [resource_slice("worker-1", GPU, [
        {"name": d, "attributes": {"model": {"string": "L40S"}}, "capacity": {"memory": {"value": "48Gi"}}}
        for d in ("gpu-0", "gpu-1")])]) == [
        "driver nic.example.com: no ResourceSlice published (the overlay templates predict 1 device)"]
    assert slices_for_node(overlays, [POOL], its, nodepool="gpu", instance_type="other", node_name="w",
                           node_labels={}) == []
    assert slices_for_node(overlays, [POOL], its, nodepool="gpu", instance_type="g1", node_name="w",
                           node_labels={}, gate_enabled=False) == []


def test_all_nodes_template():
    [spec] = predict_slices("g1", "gpu", _merged(gpu_template(allNodes=True)), {}, node_name="n")
    assert spec["allNodes"] is True and "nodeName" not in spec


def test_binding_breaks_when_another_overlay_wins_one_of_its_drivers():
    bound = dynamic(gpu_template(), nic_template(), bindings=[binding(("gpus", "gpu-0"), ("nics", "nic-0"))])
    alone, _ = merge_templates([("o", 1, parse_dynamic_resources(bound))])
    devices = [d for s in predict_slices("g1", "gpu", alone, {}) for d in s["devices"]]
    assert [d.get("boundAttributes") for d in devices] == [{PCIE: "o#0"}, None, {PCIE: "o#0"}]
    split, _ = merge_templates([("o", 1, parse_dynamic_resources(bound)),
                                ("nic-owner", 5, parse_dynamic_resources(dynamic(nic_template())))])
    devices = [d for s in predict_slices("g1", "gpu", split, {}) for d in s["devices"]]
    assert all("boundAttributes" not in d for d in devices)


# -- predicted vs published ------------------------------------------------------------------------------------

def _published(driver=GPU, devices=None):
    devices = devices if devices is not None else [
        {"name": "gpu-0", "attributes": {"model": {"string": "L40S"}}, "capacity": {"memory": {"value": "48Gi"}}},
        {"name": "gpu-1", "attributes": {"model": {"string": "L40S"}, "extra": {"int": 1}},
         "capacity": {"memory": {"value": "49152Mi"}}},
    ]
    return resource_slice("node-1", driver, devices)


def _predicted(*templates, bindings=()):
    return predict_slices("g1", "gpu", _merged(*templates, bindings=bindings), {}, node_name="node-1")


def test_matching_slices_agree():
    # extra published attributes are fine; 49152Mi == 48Gi
    assert compare_slices(_predicted(gpu_template()), [_published()]) == []


@pytest.mark.parametrize("published,expected", [
    ([], ["driver gpu.example.com: no ResourceSlice published (the overlay templates predict 2 devices)"]),
    ([_published(devices=[{"name": "gpu-0", "attributes": {"model": {"string": "L40S"}},
                           "capacity": {"memory": {"value": "48Gi"}}}])],
     ["driver gpu.example.com: device gpu-1 predicted but not published"]),
    ([_published(devices=[{"name": "gpu-0", "attributes": {"model": {"string": "H100"}},
                           "capacity": {"memory": {"value": "48Gi"}}},
                          {"name": "gpu-1", "attributes": {"model": {"string": "L40S"}},
                           "capacity": {"memory": {"value": "80Gi"}}}])],
     ["driver gpu.example.com: device gpu-0 attribute gpu.example.com/model: predicted string 'L40S', "
      "published string 'H100'",
      "driver gpu.example.com: device gpu-1 capacity gpu.example.com/memory: predicted 48Gi, published 80Gi"]),
    ([_published(), _published(driver="other.example.com")],
     ["driver other.example.com: publishes 2 devices no overlay template predicts"]),
])
def test_differences_are_reported(published, expected):
    assert compare_slices(_predicted(gpu_template()), published) == expected


def test_unnamed_template_devices_are_paired_by_content():
    template = {"spec": {"driver": GPU, "devices": [{"attributes": {"model": {"string": "L40S"}}}] * 2}}
    assert compare_slices(_predicted(template), [_published()]) == []
    three = {"spec": {"driver": GPU, "devices": [{"attributes": {"model": {"string": "L40S"}}}] * 3}}
    assert compare_slices(_predicted(three), [_published()]) == [
        "driver gpu.example.com: 1 unnamed predicted device matches no published device"]


@pytest.mark.parametrize("nic_root,ok", [("pci0", True), ("pci1", False)])
def test_bound_attributes_must_share_one_published_value(nic_root, ok):
    predicted = _predicted(gpu_template(), nic_template(),
                           bindings=[binding(("gpus", "gpu-0"), ("nics", "nic-0"))])
    gpus = _published(devices=[
        {"name": "gpu-0", "attributes": {"model": {"string": "L40S"}, PCIE: {"string": "pci0"}},
         "capacity": {"memory": {"value": "48Gi"}}},
        {"name": "gpu-1", "attributes": {"model": {"string": "L40S"}}, "capacity": {"memory": {"value": "48Gi"}}}])
    nics = _published(driver=NIC, devices=[{"name": "nic-0", "attributes": {PCIE: {"string": nic_root}}}])
    problems = compare_slices(predicted, [gpus, nics])
    if ok:
        assert problems == []
    else:
        assert problems == [f"attribute binding o#0 expects one shared {PCIE}, published "
                            f"{GPU}/gpu-0=string 'pci0', {NIC}/nic-0=string 'pci1'"]
