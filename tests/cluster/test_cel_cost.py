"""CEL past kubectl-dra's evaluator budget, against the real v1.37.2 API server and scheduler.

cel-cpp (through cel-expr-python) stops at 10,000 comprehension iterations; the scheduler stops at
a runtime cost of 1,000,000 (``operation cancelled: actual cost limit exceeded``). A selector in
between is evaluated by the scheduler, so kubectl-dra must give no verdict ("cannot tell"), never
an error or "unsatisfiable"; one past the limit is refused at admission by the API server's cost
estimate ("too complex, exceeds cost limit"), so no live claim reaches the scheduler's runtime limit.
"""

from __future__ import annotations

import time
import urllib.error

from clusterobjects import driver_class, ready_node
from loader import load

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
