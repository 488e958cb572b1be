"""Which nodes an allocation explanation shows when it shows only some of those that cannot take the
claims: the ones the pod could go to otherwise come first (``explain_allocation(first=...)``), so a
pod pinned to one node among many is explained on that node (seen in tests/cluster/test_filter_timeout.py
once the cluster had 20 more nodes whose names sort first)."""

from __future__ import annotations

from kubectl_dra.allocation.explain import explain_allocation
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object


def cluster(n: int) -> Inventory:
    inv = Inventory()
    inv.extend(parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:02d}"}})
               for i in range(n))
    inv.add(parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                          "spec": {}}))
    inv.add(parse_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": "c", "namespace": "ml", "uid": "u"},
                          "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}))
    inv.read_kinds |= {"Node", "DeviceClass", "ResourceClaim", "ResourceSlice"}
    return inv


def test_the_nodes_named_first_are_shown_first():
    inv = cluster(20)
    claims = inv.all(ResourceClaim)
    plain = explain_allocation(claims, inv)
    assert [n.node for n in plain.nodes] == [f"node-{i:02d}" for i in range(8)] and plain.omitted_nodes == 12
    pinned = explain_allocation(claims, inv, first=frozenset({"node-17"}))
    assert [n.node for n in pinned.nodes][:2] == ["node-17", "node-00"] and pinned.omitted_nodes == 12
