"""CachedPod (model/podcache.py), the msgspec view every pod of a cluster is read into for the
scheduling explanation: for any pod it decodes, the scheduler's filters must see exactly what they
see in the full pydantic Pod; a page it cannot decode cleanly must go to the tolerant path."""

from __future__ import annotations

import json

import pytest

from kubectl_dra.model.pod import Pod
from kubectl_dra.model.podcache import CachedPod
from kubectl_dra.model.registry import parse_page
from kubectl_dra.scheduling.framework import PodInfo
from kubectl_dra.scheduling.resources import scheduler_requests

PODS = [
    {"metadata": {"name": "plain", "namespace": "a", "uid": "1", "labels": {"app": "web"}},
     "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                                                           "limits": {"memory": "512Mi"}},
                                                "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}]}],
              "volumes": [{"name": "t", "projected": {"sources": []}}, {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                          {"name": "g", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}]},
     "status": {"phase": "Running"}},
    {"metadata": {"name": "sidecars", "namespace": "a", "uid": "2", "deletionTimestamp": "2026-11-20T08:00:00Z"},
     "spec": {"nodeName": "n1", "overhead": {"cpu": "250m", "memory": "120Mi"},
              "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}},
                                 {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}},
                                  "ports": [{"containerPort": 15001, "hostPort": 15001, "protocol": "UDP"}]}],
              "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi",
                                                                      "hugepages-2Mi": "64Mi"},
                                                         "limits": {"hugepages-2Mi": "64Mi"}}}],
              "priority": 1000,
              "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                  {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}},
     "status": {"phase": "Running"}},
    {"metadata": {"name": "dra", "namespace": "b", "uid": "3"},
     "spec": {"nodeName": "n1", "resources": {"requests": {"cpu": "4", "memory": "8Gi"}},
              "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
     "status": {"phase": "Running", "nodeAllocatableResourceClaimStatuses": [
         {"resourceClaimName": "x", "containers": ["c"], "mapping": [{"name": "memory", "quantity": "48Gi"}],
          "overhead": [{"name": "memory", "perPod": "1Gi", "perContainer": "512Mi"}]}]}},
    {"metadata": {"name": "resizing", "namespace": "b", "uid": "4"},
     "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
     "status": {"phase": "Running",
                "conditions": [{"type": "PodResizeInProgress", "status": "True"}],
                "containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "2", "memory": "1Gi"},
                                       "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}]}},
    {"metadata": {"name": "nominated", "namespace": "b", "uid": "5"},
     "spec": {"containers": [{"name": "c"}], "priority": 10}, "status": {"phase": "Pending", "nominatedNodeName": "n1"}},
]


def page(items) -> bytes:
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                       "items": [{"apiVersion": "v1", "kind": "Pod", **i} for i in items]}).encode()


def test_every_pod_decodes_to_what_the_full_view_says():
    cached = parse_page(CachedPod, page(PODS), "v1")
    full = parse_page(Pod, page(PODS), "v1")
    assert cached is not None and all(isinstance(p, CachedPod) for p in cached)
    for c, f in zip(cached, full):
        assert (c.name, c.namespace, c.uid, c.node_name, c.metadata.labels, c.is_done) == \
            (f.name, f.namespace, f.uid, f.node_name, f.metadata.labels, f.is_done)
        assert scheduler_requests(c) == scheduler_requests(f), c.name
        assert PodInfo(c).host_ports == PodInfo(f).host_ports
        assert PodInfo(c).priority == PodInfo(f).priority
        assert c.spec.affinity == f.spec.affinity
        assert c.status.nominated_node_name == f.status.nominated_node_name
        assert [(v.name, v.source, v.persistent_volume_claim and v.persistent_volume_claim.claim_name)
                for v in c.spec.volumes if v.source] == \
            [(v.name, v.source, v.persistent_volume_claim and v.persistent_volume_claim.claim_name)
             for v in f.spec.volumes if v.source != "projected"]
    # the numbers themselves (what a wrong decode would change): the resizing pod counts the larger cpu;
    # the init container (2) runs before the sidecar starts, so it peaks at 2 > 1 + 0.2, plus 250m overhead
    by_name = {p.name: scheduler_requests(p) for p in cached}
    assert by_name["resizing"]["cpu"] == 2000
    assert by_name["sidecars"]["cpu"] == 2250 and by_name["sidecars"]["hugepages-2Mi"] == 64 * 2**20


@pytest.mark.parametrize("bad", [
    {"cpu": "-1"},            # the API server refuses it; a snapshot or a broken server may not
    {"cpu": "abc"},           # does not parse
    {"memory": "1e400"},      # beyond what the scheduler can count
])
def test_a_page_with_a_bad_quantity_goes_to_the_tolerant_path(bad):
    pods = [PODS[0], {"metadata": {"name": "bad", "namespace": "a", "uid": "9"},
                      "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": bad}}]}}]
    assert CachedPod.decode_page(page(pods)) is None
    # the tolerant path keeps both pods as full views and names the invalid field
    kept = CachedPod.from_raw({"apiVersion": "v1", "kind": "Pod", **pods[1]})
    assert isinstance(kept, Pod) and kept.invalid_resource_fields()


def test_a_field_of_the_wrong_type_or_no_name_is_not_decoded():
    assert CachedPod.decode_page(page([{"metadata": {"name": "x"}, "spec": {"priority": "high"}}])) is None
    assert CachedPod.decode_page(page([{"metadata": {}, "spec": {}}])) is None
    assert CachedPod.decode_page(b"not json") is None
    assert CachedPod.decode_page(page([])) == []
