"""Every NodeOverlay verdict of `kubectl dra overlays` against the real Karpenter controller's own
(ValidationSucceeded: True, or False with reason Conflict or RuntimeValidation), one scenario at a
time: NodePools and NodeOverlays are created, Karpenter's nodeoverlay controller reconciles them
(observedGeneration caught up), kubectl-dra reads the same objects live with the tier's catalog
(kwok.py), and each overlay's status must be Karpenter's; kubectl-dra's own comparison with the
controller (finding OverlayStatusDisagrees) must stay silent. Then everything is deleted."""

from __future__ import annotations

import json
import urllib.error

import pytest
import yaml

import kwok
from clusterobjects import wait_for

FAMILY, CPU = "karpenter.kwok.sh/instance-family", "karpenter.kwok.sh/instance-cpu"
CAPACITY_TYPE, NODEPOOL = "karpenter.sh/capacity-type", "karpenter.sh/nodepool"


def req(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def overlay(name: str, weight: int | None = None, requirements=(), **spec) -> dict:
    body = {"requirements": list(requirements), **spec}
    if weight is not None:
        body["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name}, "spec": body}


def node_pool(name: str) -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"requirements": [req("kubernetes.io/arch", "In", "amd64")],
                                           "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                                            "name": "default"}}}}}


# (id, NodePools, NodeOverlays): what each covers is in its id
SCENARIOS = [
    ("one-price-adjustment", ["p"], [overlay("a", priceAdjustment="-10%")]),
    ("equal-weight-price-conflict", ["p"], [overlay("a", 10, price="0.05"), overlay("b", 10, priceAdjustment="-50%")]),
    ("different-weights-no-conflict", ["p"], [overlay("a", 20, price="0.05"), overlay("b", 10, price="0.07")]),
    ("equal-weight-disjoint-families", ["p"], [overlay("a", 10, [req(FAMILY, "In", "c")], price="0.05"),
                                               overlay("b", 10, [req(FAMILY, "In", "m")], price="0.07")]),
    ("equal-weight-capacity-same-key", ["p"], [overlay("a", 10, capacity={"example.com/gpu": "1"}),
                                               overlay("b", 10, capacity={"example.com/gpu": "2"})]),
    ("equal-weight-capacity-other-keys", ["p"], [overlay("a", 10, capacity={"example.com/gpu": "1"}),
                                                 overlay("b", 10, capacity={"example.com/fpga": "1"})]),
    ("equal-weight-price-and-capacity", ["p"], [overlay("a", 10, price="0.05"),
                                                overlay("b", 10, capacity={"example.com/gpu": "1"})]),
    ("gt-lt-disjoint", ["p"], [overlay("a", 10, [req(CPU, "Gt", "4")], price="0.05"),
                               overlay("b", 10, [req(CPU, "Lt", "4")], price="0.07")]),
    ("gt-lt-overlap", ["p"], [overlay("a", 10, [req(CPU, "Gt", "2")], price="0.05"),
                              overlay("b", 10, [req(CPU, "Lt", "8")], price="0.07")]),
    ("exists-doesnotexist", ["p"], [overlay("a", 10, [req(FAMILY, "Exists")], price="0.05"),
                                    overlay("b", 10, [req(FAMILY, "DoesNotExist")], price="0.07")]),
    ("notin-in-disjoint", ["p"], [overlay("a", 10, [req(FAMILY, "NotIn", "c")], price="0.05"),
                                  overlay("b", 10, [req(FAMILY, "In", "c")], price="0.07")]),
    ("nodepool-scoped", ["p1", "p2"], [overlay("a", 10, [req(NODEPOOL, "In", "p1")], price="0.05"),
                                       overlay("b", 10, [req(NODEPOOL, "In", "p2")], price="0.07")]),
    ("capacity-type-scoped", ["p"], [overlay("a", 10, [req(CAPACITY_TYPE, "In", "spot")], price="0.05"),
                                     overlay("b", 10, [req(CAPACITY_TYPE, "In", "on-demand")], price="0.07")]),
    ("three-equal-weight", ["p"], [overlay("a", 10, price="0.05"), overlay("b", 10, price="0.06"),
                                   overlay("c", 10, price="0.07")]),
    ("same-value-equal-weight", ["p"], [overlay("a", 10, price="0.05"), overlay("b", 10, price="0.05")]),
    ("runtime-unknown-capacity-type", ["p"], [overlay("a", requirements=[req(CAPACITY_TYPE, "In", "bogus")],
                                                      price="0.05")]),
    ("runtime-bad-label-value", ["p"], [overlay("a", requirements=[req("example.com/team", "In", "a b")],
                                                price="0.05")]),
    ("runtime-beside-a-valid-one", ["p"], [overlay("a", 10, [req(CAPACITY_TYPE, "In", "bogus")], price="0.05"),
                                           overlay("b", 10, price="0.07")]),
]

# what the v1.14.1 CRD refuses at admission: such an overlay never reaches Karpenter; kubectl-dra,
# given it in a file, must name it with the API server's own words
REFUSED = [
    ("restricted-capacity", {"requirements": [], "capacity": {"cpu": "1"}}),
    ("restricted-capacity-two", {"requirements": [], "capacity": {"pods": "1", "memory": "1Gi"}}),
    ("restricted-domain", {"requirements": [req("karpenter.sh/custom", "In", "x")], "price": "1"}),
    ("restricted-subdomain", {"requirements": [req("a.karpenter.sh/custom", "In", "x")], "price": "1"}),
    ("restricted-hostname", {"requirements": [req("kubernetes.io/hostname", "In", "x")], "price": "1"}),
    ("notin-without-values", {"requirements": [{"key": "example.com/x", "operator": "NotIn", "values": []}],
                              "price": "1"}),
    ("gt-negative", {"requirements": [req("example.com/x", "Gt", "-1")], "price": "1"}),
    ("gt-two-values", {"requirements": [req("example.com/x", "Gt", "1", "2")], "price": "1"}),
    ("key-pattern", {"requirements": [req("a b/x", "In", "a")], "price": "1"}),
    ("price-and-adjustment", {"requirements": [], "price": "1", "priceAdjustment": "+1"}),
]


def _verdict(obj: dict) -> str | None:
    """Karpenter's verdict on a NodeOverlay, once it has reconciled this generation."""
    for condition in obj.get("status", {}).get("conditions", []):
        if condition["type"] == "ValidationSucceeded" and \
                condition.get("observedGeneration") == obj["metadata"]["generation"]:
            return "Ready" if condition["status"] == "True" else condition["reason"]
    return None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_overlay_verdicts_are_karpenters(karpenter, dra, tmp_path, scenario):
    plane, _ = karpenter
    sid, pools, overlays = scenario
    pools = [node_pool(f"{sid}-{p}") for p in pools]
    overlays = [json.loads(json.dumps(o).replace('"' + NODEPOOL + '", "operator": "In", "values": ["',
                                                  '"' + NODEPOOL + '", "operator": "In", "values": ["' + sid + "-"))
                for o in overlays]
    for o in overlays:
        o["metadata"]["name"] = f"{sid}-{o['metadata']['name']}"
    # the sentinel comes last, in creation and in Karpenter's order (lowest weight, last name): once it has
    # a verdict, a reconcile that listed every overlay of the scenario has written all their statuses
    sentinel = overlay(f"{sid}-zz-sentinel", 1, [req("node.kubernetes.io/instance-type", "In", "no-such-type")],
                       price="1")
    created = []
    try:
        for obj in [*pools, *overlays, sentinel]:
            path = "/apis/karpenter.sh/v1/nodepools" if obj["kind"] == "NodePool" else \
                "/apis/karpenter.sh/v1alpha1/nodeoverlays"
            if obj is (overlays or [sentinel])[0]:  # overlays only once Karpenter knows the NodePools' types
                for p in pools:
                    wait_for(f"NodePool {p['metadata']['name']} Ready", lambda p=p: _ready(plane, p["metadata"]["name"]))
            try:
                plane.request("POST", path, obj)
            except urllib.error.HTTPError as exc:
                pytest.fail(f"the API server refused {obj['kind']} {obj['metadata']['name']}: {exc.read()[:400]!r}")
            created.append((path, obj["metadata"]["name"]))

        wait_for("Karpenter's verdict on the sentinel", lambda: _verdict(plane.request(
            "GET", f"/apis/karpenter.sh/v1alpha1/nodeoverlays/{sentinel['metadata']['name']}")))
        items = [plane.request("GET", f"/apis/karpenter.sh/v1alpha1/nodeoverlays/{o['metadata']['name']}")
                 for o in overlays]
        karpenters = {i["metadata"]["name"]: _verdict(i) for i in items}
        assert all(karpenters.values()), karpenters

        catalog = tmp_path / "catalog.yaml"
        catalog.write_text(yaml.safe_dump(kwok.catalog([p["metadata"]["name"] for p in pools])))
        kubeconfig = plane.kubeconfig(tmp_path / "kubeconfig")
        result = dra("overlays", "--kubeconfig", str(kubeconfig), "--catalog", str(catalog), "--feature-gate", "on",
                     *[arg for p in pools for arg in ("--nodepool", p["metadata"]["name"])], "-o", "json")
        assert result.exit_code in (0, 4), result
        doc = result.json()
        ours = {o["name"]: o["status"] for o in doc["overlays"] if o["name"] in karpenters}
        assert ours == karpenters, (ours, karpenters)
        assert "OverlayStatusDisagrees" not in [f["code"] for f in doc["findings"]], doc["findings"]
    finally:
        for path, name in reversed(created):
            try:
                plane.request("DELETE", f"{path}/{name}")
            except urllib.error.HTTPError:
                pass
        for path, name in created:
            wait_for(f"{name} to be deleted", lambda: plane.absent(f"{path}/{name}"))


def _ready(plane, name: str) -> bool:
    pool = plane.request("GET", f"/apis/karpenter.sh/v1/nodepools/{name}")
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pool.get("status", {}).get("conditions", []))




@pytest.mark.parametrize("scenario", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_the_api_server_refuses_is_named_in_its_words(karpenter, dra, tmp_path, scenario):
    plane, _ = karpenter
    name, spec = scenario
    obj = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": f"refused-{name}"},
           "spec": spec}
    try:
        plane.request("POST", "/apis/karpenter.sh/v1alpha1/nodeoverlays", obj)
        refused = None
    except urllib.error.HTTPError as exc:
        refused = json.loads(exc.read())["message"]
    if refused is None:
        plane.request("DELETE", f"/apis/karpenter.sh/v1alpha1/nodeoverlays/refused-{name}")
    assert refused is not None, f"the API server admitted {obj}"
    words = refused.split(" is invalid: ", 1)[1]

    snapshot = tmp_path / "overlays.yaml"
    snapshot.write_text(yaml.safe_dump_all([node_pool("p"), obj]))
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(kwok.catalog(["p"])))
    result = dra("overlays", "--snapshot", str(snapshot), "--catalog", str(catalog), "--feature-gate", "on", "-o", "json")
    [ours] = [o for o in result.json()["overlays"] if o["name"] == obj["metadata"]["name"]]
    assert ours["errors"] and "; ".join(ours["errors"]) == words, (ours["errors"], words)
    [finding] = [f for f in result.json()["findings"] if f["code"] == "OverlayRuntimeValidation"]
    assert "API server's CRD validation would refuse this object" in finding["message"]
