"""A claim whose allocation search outlasts the DynamicResources filterTimeout, on the real v1.37.2
scheduler (profile ``dra-short-filter`` of the full cluster: filterTimeout 100ms), and the same
words from ``explain pod`` with that profile (docs/kubernetes/dra-apis.md §8).

Request ``a`` wants 6 of a 40-device pool and request ``b`` matches no device: the upstream
allocator tries every 6-set for ``a`` (3,838,380) before it would say "cannot allocate", so the
real scheduler stops at its bound and fails the attempt with an Error, and kubectl-dra, stopped at
the same bound, must say so: the scheduler's words, and that which answer it gives is not known
(while the node cannot take the claim either way)."""

from __future__ import annotations

import yaml

from clusterobjects import SHORT_FILTER, driver_class, ready_node, scheduled_false, settle
from loader import load

NODE = "filter-timeout-node-1"
NAMESPACE = "filter-timeout"
DRIVER = "slowsearch.example.com"


def test_a_search_past_filter_timeout_gets_the_scheduler_words(full_cluster, dra, tmp_path):
    plane = full_cluster
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "six", "namespace": NAMESPACE},
             "spec": {"devices": {"requests": [
                 {"name": "a", "exactly": {"deviceClassName": DRIVER, "count": 6}},
                 {"name": "b", "exactly": {"deviceClassName": DRIVER,
                                           "selectors": [{"cel": {"expression": 'device.driver == "none"'}}]}}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "six", "namespace": NAMESPACE},
           "spec": {"schedulerName": SHORT_FILTER["schedulerName"],
                    "nodeSelector": {"kubernetes.io/hostname": NODE},
                    "containers": [{"name": "c", "image": "registry.example/app:1",
                                    "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "d"}]}}],
                    "resourceClaims": [{"name": "d", "resourceClaimName": "six"}]}}
    load(plane, [ready_node(NODE), driver_class(DRIVER),
                 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-slow"},
                  "spec": {"driver": DRIVER, "nodeName": NODE,
                           "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": f"dev-{i}"} for i in range(40)]}},
                 claim, pod])
    condition = scheduled_false(settle(plane, NAMESPACE, "six"))
    assert condition is not None and condition["reason"] == "SchedulerError", condition
    words = f'running "DynamicResources" filter plugin: node {NODE}: timed out trying to allocate devices'
    assert condition["message"] == words  # the real scheduler's, read from the pod

    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                      "kind": "KubeSchedulerConfiguration",
                                      "profiles": [{"schedulerName": "default-scheduler"}, SHORT_FILTER]}))
    kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE))
    explained = dra("explain", "pod", "six", "--kubeconfig", kubeconfig, "--scheduler-config", str(config),
                    "-o", "json")
    assert explained.exit_code == 0, explained
    scheduling = explained.json()["scheduling"]
    assert scheduling["possibleError"] == words and scheduling["recorded"] == words
    assert scheduling["message"] is None and scheduling["messageKnown"] is False
    [node] = [n for n in scheduling["nodes"] if n["node"] == NODE]
    assert node["fits"] is None and "no allocation exists here" in node["undetermined"][0]["why"]
    [allocation] = [n for n in explained.json()["allocation"]["nodes"] if n["node"] == NODE]
    assert allocation["feasible"] is False and allocation["possibleError"] == words.split(": ", 1)[1]
    assert "AllocationSearchSlow" in [f["code"] for f in explained.json()["findings"]]

    text = dra("explain", "pod", "six", "--kubeconfig", kubeconfig, "--scheduler-config", str(config))
    assert f"may fail with an error instead: {words}" in " ".join(text.stdout.split())
