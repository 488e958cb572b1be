"""CEL past kubectl-dra's evaluator budget, against the real v1.37.2 API server and scheduler.

cel-cpp (through cel-expr-python) stops at 10,000 comprehension iterations; the scheduler stops at
a runtime cost of 1,000,000 (``operation cancelled: actual cost limit exceeded``). A selector in
between is evaluated by the scheduler, so kubectl-dra must give no verdict ("cannot tell"), never
an error or "unsatisfiable"; one past the limit is refused at admission by the API server's cost
estimate ("too complex, exceeds cost limit"). A claim that got past admission anyway (written to
etcd here, as objects under other validation or a restore are) makes the scheduler fail the node
with its runtime cost error; kubectl-dra, which cannot count cost, names those words as what the
scheduler may say and gives no verdict of its own.
"""

from __future__ import annotations

import time
import urllib.error

from clusterobjects import driver_class, ready_node, scheduled_false, settle
from loader import load

from kubectl_dra.allocation.cel import COST_ERROR

NODE = "cel-cost-node-1"
NAMESPACE = "cel-cost"
DRIVER = "celcost.example.com"


def _nested(depth: int) -> str:
    expression = f'device.driver == "{DRIVER}"'
    for level in range(depth):
        expression = f"[0,1,2,3,4,5,6,7,8,9].all(x{level}, {expression})"
    return expression


def _claim(name: str, expression: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                "deviceClassName": DRIVER, "selectors": [{"cel": {"expression": expression}}]}}]}}}


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                     "tolerations": [{"operator": "Exists"}]}}


def test_selector_between_the_budgets_is_no_verdict_and_the_scheduler_runs_it(full_cluster, dra, tmp_path):
    plane = full_cluster
    load(plane, [ready_node(NODE),
                 driver_class(DRIVER),
                 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-cel"},
                  "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1,
                                                                        "resourceSliceCount": 1},
                           "devices": [{"name": "dev-0"}]}},
                 _claim("deep", _nested(5))])  # 111,110 iterations
    kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE))
    before = dra("explain", "claim", "deep", "--kubeconfig", kubeconfig, "-o", "json")
    assert before.exit_code == 0, before
    codes = [f["code"] for f in before.json()["findings"]]
    assert "Unsatisfiable" not in codes and "unexpected" not in before.stderr
    nodes = before.json()["allocation"]["nodes"]
    assert [n["node"] for n in nodes if n.get("undetermined")] == [NODE]

    load(plane, [_pod("deep")])
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        pod = plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/deep")
        if pod["spec"].get("nodeName"):
            break
        time.sleep(0.3)
    # the scheduler evaluated it within its cost limit and allocated: "cannot tell" was the truth
    assert pod["spec"].get("nodeName") == NODE, pod.get("status")

    try:  # 1.1 million iterations: the API server's cost estimate refuses it before any scheduler sees it
        plane.request("POST", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims",
                      _claim("deeper", _nested(6)))
        refused = None
    except urllib.error.HTTPError as exc:
        refused = exc.read().decode()
    assert refused is not None and "selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit" \
        in refused, refused


def _stored_past_admission(plane, claim: dict) -> None:
    """The claim written into etcd as the API server stores objects (it reads JSON back as well as
    protobuf): past admission, whose cost estimate would refuse it. Objects written under an older
    validation, restored from a backup, or read from a snapshot file reach kubectl-dra this way."""
    import base64
    import json
    import urllib.request
    import uuid

    meta = claim["metadata"]
    stored = {**claim, "metadata": {**meta, "uid": str(uuid.uuid4()), "creationTimestamp": "2026-11-20T08:00:00Z"}}
    key = f"/registry/resourceclaims/{meta['namespace']}/{meta['name']}"
    body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                       "value": base64.b64encode(json.dumps(stored).encode()).decode()}).encode()
    request = urllib.request.Request(f"{plane.etcd_url}/v3/kv/put", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def test_a_selector_past_the_cost_limit_fails_the_scheduler_with_its_words(full_cluster, dra, tmp_path):
    plane = full_cluster
    node = "cel-cost-node-2"
    load(plane, [ready_node(node),
                 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-cel"},
                  "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                        "resourceSliceCount": 1},
                           "devices": [{"name": "dev-0"}]}}])
    for path, obj in (("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
                      ("/apis/resource.k8s.io/v1/deviceclasses", driver_class(DRIVER))):
        try:  # the other test of this file may have made them
            plane.request("POST", path, obj)
        except urllib.error.HTTPError as exc:
            assert exc.code == 409, exc
    _stored_past_admission(plane, _claim("deepest", _nested(6)))  # 1,111,110 iterations
    pod = _pod("deepest")
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    load(plane, [pod])
    condition = scheduled_false(settle(plane, NAMESPACE, "deepest"))
    assert condition is not None and condition["reason"] == "SchedulerError", condition
    assert condition["message"] == (f'running "DynamicResources" filter plugin: claim {NAMESPACE}/deepest: selector #0 '
                                    f"on device {DRIVER}/{node}/dev-0: CEL runtime error: {COST_ERROR}")

    # kubectl-dra's evaluator cannot count that far: no verdict, and the scheduler's words as what it may say
    kubeconfig = str(plane.kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE))
    explained = dra("explain", "pod", "deepest", "--kubeconfig", kubeconfig, "-o", "json")
    assert explained.exit_code == 0, explained
    scheduling = explained.json()["scheduling"]
    assert scheduling["possibleError"] == condition["message"] == scheduling["recorded"]
    assert scheduling["message"] is None and scheduling["messageKnown"] is False
    [verdict] = [n for n in scheduling["nodes"] if n["node"] == node]
    assert verdict["fits"] is None and "counts no cost" in verdict["undetermined"][0]["why"]
    [allocation] = [n for n in explained.json()["allocation"]["nodes"] if n["node"] == node]
    assert allocation["undetermined"] and allocation["possibleError"] == condition["message"].split(": ", 1)[1]
