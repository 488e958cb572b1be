"""What Karpenter would launch for a pending pod (kubectl_dra/scheduling/launch.py), table-driven on a
small catalog; every rule here was confirmed against the real Karpenter v1.14.1 by
tests/karpenter/test_launch_oracle.py (docs/kubernetes/nodeoverlay.md §8)."""

from __future__ import annotations

import pytest

from kubectl_dra.model.karpenter import NodeOverlay, NodePool, order_by_weight
from kubectl_dra.model.pod import Pod
from kubectl_dra.overlays.catalog import from_catalog
from kubectl_dra.overlays.explain import evaluate
from kubectl_dra.scheduling.launch import dra_answer, has_claims, launch_findings, predict_launch

FAMILY = "example.kwok/family"
TYPES = [("c-2x", "c", 2, 0.10, 0.04), ("c-4x", "c", 4, 0.20, 0.08), ("m-4x", "m", 4, 0.25, 0.10)]


def catalog(prices: bool = True) -> list:
    return from_catalog({"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "InstanceTypeCatalog", "instanceTypes": [
        {"name": name, "labels": {"node.kubernetes.io/instance-type": name, FAMILY: family},
         "capacity": {"cpu": str(cpu), "memory": "8Gi", "pods": "110"},
         "overhead": {"cpu": "100m", "memory": "10Mi"},
         "offerings": [{"capacityType": kind, "zone": "z", **({"price": price} if prices else {})}
                       for kind, price in (("on-demand", od), ("spot", spot))]}
        for name, family, cpu, od, spot in TYPES]})


def pool(name: str, weight: int | None = None, taints=(), requirements=()) -> NodePool:
    return NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                                    "spec": {**({"weight": weight} if weight is not None else {}), "template": {
                                        "spec": {"taints": list(taints), "requirements": list(requirements),
                                                 "nodeClassRef": {"group": "g", "kind": "K", "name": "n"}}}}})


def overlay(name: str, **spec) -> NodeOverlay:
    return NodeOverlay.model_validate({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                                       "metadata": {"name": name}, "spec": {"requirements": [], **spec}})


def pod(requests: dict, **spec) -> Pod:
    return Pod.model_validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
                               "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}})


def predict(the_pod: Pod, pools: list[NodePool], overlays=(), prices: bool = True, gate: bool | None = True):
    types = catalog(prices)
    views = evaluate(list(overlays), pools, types, gate_enabled=gate).instance_types
    return predict_launch(the_pod, pools, views, types)


def test_nodepools_go_by_weight_then_name_descending():
    order = order_by_weight([pool("a", 10), pool("b", 10), pool("c"), pool("d", 50)])
    assert [p.name for p in order] == ["d", "b", "a", "c"]


@pytest.mark.parametrize("cpu, allowed", [
    ("1900m", ["c-2x", "c-4x", "m-4x"]),  # 2 - 100m overhead: fits exactly
    ("1901m", ["c-4x", "m-4x"]),
    ("3900m", ["c-4x", "m-4x"]),
    ("4", []),  # capacity 4, overhead 100m
])
def test_the_requests_fit_capacity_minus_overhead(cpu, allowed):
    launch = predict(pod({"cpu": cpu}), [pool("p")])
    [p] = launch.node_pools
    assert [t.name for t in p.instance_types] == allowed
    assert p.requests == {"cpu": cpu, "pods": "1"}
    assert launch.node_pool == ("p" if allowed else None)
    if not allowed:
        assert p.refused == "no instance type meets the requirements and fits the requests"
        assert p.rejected[0].reason == "cpu: needs 4, allocatable 1900m"


def test_capacity_only_an_overlay_gives_counts_and_is_named():
    gpu = {"cpu": "1", "example.com/gpu": "1"}
    without = predict(pod(gpu), [pool("p")])
    assert without.node_pool is None
    assert without.node_pools[0].rejected[0].reason == "example.com/gpu: needs 1, no such capacity"
    given = overlay("gpus", requirements=[{"key": FAMILY, "operator": "In", "values": ["m"]}],
                    capacity={"example.com/gpu": "2"})
    with_it = predict(pod(gpu), [pool("p")], [given])
    assert [t.name for t in with_it.node_pools[0].instance_types] == ["m-4x"]
    assert with_it.node_pools[0].capacity_from_overlays == {"example.com/gpu": ["gpus"]}
    assert predict(pod(gpu), [pool("p")], [given], gate=False).node_pool is None  # the gate off: no capacity


def test_karpenter_orders_by_the_overlay_price_the_provider_picks_by_its_own():
    cheap_m = overlay("cheap-m", requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                 "values": ["m-4x"]}], price="0.01")
    [p] = predict(pod({"cpu": "3"}), [pool("p")], [cheap_m]).node_pools
    assert [(t.name, t.price, t.overlay) for t in p.instance_types] == [("m-4x", 0.01, "cheap-m"), ("c-4x", 0.08, None)]
    assert [(o.instance_type, o.capacity_type, o.base_price, o.price) for o in p.provider_pick] == \
        [("c-4x", "spot", 0.08, 0.08)]


def test_unknown_prices_name_no_provider_pick():
    [p] = predict(pod({"cpu": "3"}), [pool("p")], prices=False).node_pools
    assert [t.name for t in p.instance_types] == ["c-4x", "m-4x"] and p.provider_pick == []


def test_a_pool_taint_the_pod_does_not_tolerate_passes_to_the_next_pool():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    pools = [pool("a", 10), pool("b", 50, taints=[taint])]
    launch = predict(pod({"cpu": "1"}), pools)
    assert launch.node_pool == "a"
    assert launch.node_pools[0].refused == "the pod does not tolerate the NodePool's taint dedicated=gpu:NoSchedule"
    tolerating = pod({"cpu": "1"}, tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert predict(tolerating, pools).node_pool == "b"


def test_a_pod_may_select_a_provider_label_no_nodepool_names():
    launch = predict(pod({"cpu": "1"}, nodeSelector={FAMILY: "m"}), [pool("p")])
    assert [t.name for t in launch.node_pools[0].instance_types] == ["m-4x"]
    # a key neither the NodePool nor the provider defines: the NodePool is refused
    other = predict(pod({"cpu": "1"}, nodeSelector={"team": "x"}), [pool("p")])
    assert other.node_pool is None and "key team is not defined" in other.node_pools[0].refused


def test_nodepool_requirements_narrow_offerings():
    on_demand = pool("p", requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In",
                                         "values": ["on-demand"]}])
    [p] = predict(pod({"cpu": "1"}), [on_demand]).node_pools
    assert [(o.instance_type, o.capacity_type, o.base_price) for o in p.provider_pick] == [("c-2x", "on-demand", 0.10)]


def test_a_pod_with_claims_gets_karpenters_default_answer():
    with_claim = pod({"cpu": "1"}, resourceClaims=[{"name": "g", "resourceClaimName": "x"}])
    assert has_claims(with_claim) and not has_claims(pod({"cpu": "1"}))
    skipped = dra_answer(None)
    assert skipped.node_pool is None and skipped.known and skipped.message.endswith(
        "pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter")
    assert skipped.assumptions == ["Karpenter's IGNORE_DRA_REQUESTS at its default, true"]
    [finding] = launch_findings(skipped, with_claim)
    assert finding.code == "KarpenterLaunchesNothing" and finding.message.endswith("at its default, true)")
    assert dra_answer(True).assumptions == [] and "(assumed" not in launch_findings(dra_answer(True), with_claim)[0].message
    # simulated: the devices an instance type will have are the cloud provider's, which no API shows
    simulated = dra_answer(False)
    assert not simulated.known and simulated.message.startswith("cannot tell")
    assert launch_findings(simulated, with_claim) == []
